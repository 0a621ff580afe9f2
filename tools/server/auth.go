package server

import (
	"sync"
	"time"
)

// Password checks, slowed against guessing.
//
// A guess costs an attacker one round trip; unchecked, one connection
// tries some 200,000 passwords a second, and many connections more. A
// delay per connection does not stop that: the attacker opens a new
// connection per guess, or reads the delay itself as the answer ("no reply
// yet: wrong"). So the brake is server-wide and comes before the check:
//   - wrong passwords spend tokens of one bucket, authFailureBurst deep,
//     refilled at authFailuresPerSecond; while it is empty, every password
//     check, right or wrong, on any connection, waits for a token. A
//     server nobody attacks never waits; under attack, guesses run at
//     authFailuresPerSecond in all, however many connections bring them,
//     and a right password is checked in its turn;
//   - a connection that has given authMaxFailures wrong passwords is
//     closed, so one connection cannot queue guesses for ever;
//   - the comparison takes the same time whatever the guess: both sides
//     are hashed and the hashes compared in constant time, so neither the
//     length nor a common prefix shows (acl.go's authenticate), and the
//     gate covers every user's passwords, not only the default user's;
//   - wrong passwords are logged, at most one line a second with the count
//     of the others.
const (
	authFailuresPerSecond = 100
	authFailureBurst      = 100
	authMaxFailures       = 10
)

type authGate struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
	now    func() time.Time
}

// init fills the bucket (and may be called again, by tests, to refill it).
func (g *authGate) init() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tokens = authFailureBurst
	g.now = time.Now
	g.last = g.now()
}

// delay is how long until the bucket holds a token; 0 if it does.
func (g *authGate) delay() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.tokens = min(authFailureBurst, g.tokens+now.Sub(g.last).Seconds()*authFailuresPerSecond)
	g.last = now
	if short := 1 - g.tokens; short > 0 {
		return time.Duration(short/authFailuresPerSecond*float64(time.Second)) + time.Millisecond
	}
	return 0
}

// failed takes a token for a wrong password.
func (g *authGate) failed() {
	g.mu.Lock()
	g.tokens--
	g.mu.Unlock()
}

// authFailed counts a wrong password against the connection and the
// gate, logs it (at most a line a second) and closes a connection that
// has given authMaxFailures. The connection has waited its turn at the
// gate before (connection.mustWaitForAuth); a queued AUTH inside EXEC
// does not wait, its client having authenticated already. Which user and
// password are right is acl.go's.
func (s *Server) authFailed(sess *session) {
	s.auth.failed()
	sess.authFailures++
	remote := ""
	if sess.client != nil {
		remote = sess.client.remote()
	}
	s.logAuth.log(s.cfg.Logger, "wrong password", "remote", remote, "failures_on_connection", sess.authFailures)
	if sess.authFailures >= authMaxFailures {
		sess.quit = true
	}
}
