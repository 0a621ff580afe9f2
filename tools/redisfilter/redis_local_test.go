package redisfilter

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Without OHBLOOM_REDIS_ADDR or OHBLOOM_REDIS_CLUSTER, the tests start
// their own redis-server (and three for a cluster) when one is installed,
// once for the package, so that a developer's `go test ./...` runs them as
// CI does; they skip only where there is no redis-server.

var (
	localOnce    sync.Once
	localAddr    string
	localErr     error
	clusterOnce  sync.Once
	clusterAddrs string
	clusterErr   error
	localServers []*exec.Cmd
	localDir     string
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range localServers {
		c.Process.Kill()
		c.Wait()
	}
	if localDir != "" {
		os.RemoveAll(localDir)
	}
	os.Exit(code)
}

// freePort finds a loopback port that is free now, and whose cluster bus
// port (port + 10000) is free too.
func freePort() (int, error) {
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port pair")
}

// startRedis starts a throwaway redis-server with extra flags and returns
// its address once it answers PING.
func startRedis(extra ...string) (string, error) {
	if localDir == "" {
		d, err := os.MkdirTemp("", "ohbloom-redisfilter-")
		if err != nil {
			return "", err
		}
		localDir = d
	}
	var lastErr error
	for range 5 { // a port found free may be taken before the server binds it
		port, err := freePort()
		if err != nil {
			return "", err
		}
		dir := filepath.Join(localDir, strconv.Itoa(port))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, extra...)
		cmd := exec.Command("redis-server", args...)
		if err := cmd.Start(); err != nil {
			return "", err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		deadline := time.Now().Add(30 * time.Second)
		for {
			select {
			case err := <-exited:
				lastErr = fmt.Errorf("redis-server on %s exited: %v", addr, err)
			default:
				if rdb.Ping(context.Background()).Err() == nil {
					rdb.Close()
					localServers = append(localServers, cmd)
					return addr, nil
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					rdb.Close()
					return "", fmt.Errorf("redis-server on %s did not answer", addr)
				}
				time.Sleep(20 * time.Millisecond) // polling for readiness, not standing in for an event
				continue
			}
			break
		}
		rdb.Close()
	}
	return "", lastErr
}

// redisAddr is OHBLOOM_REDIS_ADDR, or a server of the package's own.
func redisAddr(t testing.TB) string {
	t.Helper()
	if addr := os.Getenv("OHBLOOM_REDIS_ADDR"); addr != "" {
		return addr
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI must set OHBLOOM_REDIS_ADDR (.ci/run starts redis-server)")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("OHBLOOM_REDIS_ADDR is not set and there is no redis-server to start")
	}
	localOnce.Do(func() { localAddr, localErr = startRedis() })
	if localErr != nil {
		t.Fatal(localErr)
	}
	return localAddr
}

// clusterAddr is OHBLOOM_REDIS_CLUSTER, or a three-node cluster of the
// package's own.
func clusterAddr(t testing.TB) string {
	t.Helper()
	if addrs := os.Getenv("OHBLOOM_REDIS_CLUSTER"); addrs != "" {
		return addrs
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI must set OHBLOOM_REDIS_CLUSTER (.ci/run starts a Redis Cluster)")
	}
	for _, tool := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("OHBLOOM_REDIS_CLUSTER is not set and there is no %s to start one", tool)
		}
	}
	clusterOnce.Do(func() { clusterAddrs, clusterErr = startCluster() })
	if clusterErr != nil {
		t.Fatal(clusterErr)
	}
	return clusterAddrs
}

func startCluster() (string, error) {
	var addrs []string
	for i := range 3 {
		addr, err := startRedis("--cluster-enabled", "yes", "--cluster-config-file", fmt.Sprintf("nodes-%d.conf", i))
		if err != nil {
			return "", err
		}
		addrs = append(addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
	}
	// Every node must say the cluster is up: each learns the others'
	// slots through the bus in its own time, and a client may reach any.
	ready := func() bool {
		for _, a := range addrs {
			host, port, _ := net.SplitHostPort(a)
			out, _ := exec.Command("redis-cli", "-h", host, "-p", port, "cluster", "info").Output()
			if !strings.Contains(string(out), "cluster_state:ok") {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ready() {
			return strings.Join(addrs, ","), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the cluster on %v did not reach cluster_state:ok", addrs)
		}
		time.Sleep(50 * time.Millisecond) // polling for readiness
	}
}
