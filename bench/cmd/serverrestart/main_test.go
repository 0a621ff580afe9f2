package main

import (
	"bufio"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func replies(s string) *conn { return &conn{r: bufio.NewReader(strings.NewReader(s))} }

// The RESP reader takes what the servers answer: INFO's bulk string,
// BF.INFO's array, -LOADING as an error value (not an answer), integers.
func TestRead(t *testing.T) {
	c := replies("$5\r\nab\r\nc\r\n*2\r\n:1\r\n+OK\r\n-LOADING Redis is loading the dataset in memory\r\n:0\r\n")
	want := []any{"ab\r\nc", []any{int64(1), "OK"}, errors.New("LOADING Redis is loading the dataset in memory"), int64(0)}
	for i, w := range want {
		got, err := c.read()
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("reply %d: %#v %v, want %#v", i, got, err, w)
		}
	}
	if _, err := c.read(); err == nil {
		t.Error("read past the end: no error")
	}
}

// The fill's reply check passes arrays of integers and stops at anything
// else: an error in the array, or an error for the whole command.
func TestSkipIntegers(t *testing.T) {
	if err := replies("*3\r\n:1\r\n:0\r\n:1\r\n").skipIntegers(); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"*2\r\n:1\r\n-ERR filter reached max-filter-bytes\r\n", "-ERR not found\r\n"} {
		if err := replies(bad).skipIntegers(); err == nil {
			t.Errorf("%q passed", bad)
		}
	}
}

func TestMedian(t *testing.T) {
	rs := []result{{ready: 3 * time.Second}, {ready: time.Second}, {ready: 2 * time.Second}}
	if m := median(rs, func(r result) float64 { return r.ready.Seconds() }); m != 2 {
		t.Errorf("median of 3, 1, 2: %v", m)
	}
	if m := median(rs[:2], func(r result) float64 { return r.ready.Seconds() }); m != 2 {
		t.Errorf("median of 3, 1: %v", m)
	}
}
