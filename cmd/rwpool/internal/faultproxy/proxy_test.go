package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer answers every line with the same line, until the test ends.
func echoServer(t *testing.T) string {
	return server(t, func(c net.Conn) { io.Copy(c, c) })
}

// server runs serve on every connection to a new listener, closing the
// connection when serve returns, until the test ends.
func server(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func newProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := New("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

// roundTrip sends line and returns the echo, or the error after wait.
func (cl *client) roundTrip(line string, wait time.Duration) (string, error) {
	cl.c.SetDeadline(time.Now().Add(wait))
	defer cl.c.SetDeadline(time.Time{})
	if _, err := io.WriteString(cl.c, line+"\n"); err != nil {
		return "", err
	}
	s, err := cl.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return s[:len(s)-1], nil
}

func mustEcho(t *testing.T, cl *client, line string) {
	t.Helper()
	got, err := cl.roundTrip(line, 2*time.Second)
	if err != nil || got != line {
		t.Fatalf("echo %q: got %q, %v", line, got, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestPass(t *testing.T) {
	p := newProxy(t)
	if p.Mode() != Pass || p.Mode().String() != "pass" {
		t.Fatalf("mode %v", p.Mode())
	}
	a, b := dial(t, p.Addr()), dial(t, p.Addr())
	mustEcho(t, a, "hello")
	mustEcho(t, b, "world")
	mustEcho(t, a, "again")
	if got := p.Accepted(); got != 2 {
		t.Errorf("Accepted = %d, want 2", got)
	}
	if got := p.Active(); got != 2 {
		t.Errorf("Active = %d, want 2", got)
	}
}

// TestSetDelay: answers come late on open and new connections, by the
// delay of the moment, and in time again once it is 0; Close does not
// wait for a held chunk.
func TestSetDelay(t *testing.T) {
	const d = 150 * time.Millisecond
	p := newProxy(t)
	old := dial(t, p.Addr())
	mustEcho(t, old, "before")
	p.SetDelay(d)
	if p.Delay() != d {
		t.Fatalf("Delay = %s, want %s", p.Delay(), d)
	}
	for _, cl := range []*client{old, dial(t, p.Addr())} {
		start := time.Now()
		mustEcho(t, cl, "late")
		if took := time.Since(start); took < d {
			t.Errorf("echo with a delay of %s took %s", d, took)
		}
	}
	p.SetDelay(0)
	start := time.Now()
	mustEcho(t, old, "in time")
	if took := time.Since(start); took >= d {
		t.Errorf("echo without delay took %s", took)
	}
	// A chunk held back when the proxy closes does not hold Close up.
	p.SetDelay(time.Hour)
	if _, err := io.WriteString(old.c, "held\n"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a delayed chunk")
	}
}

func TestKillRefusesAndResets(t *testing.T) {
	p := newProxy(t)
	old := dial(t, p.Addr())
	mustEcho(t, old, "before")
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if p.Mode() != Kill {
		t.Fatalf("mode %v", p.Mode())
	}
	// The open connection is gone.
	if got, err := old.roundTrip("after", 2*time.Second); err == nil {
		t.Fatalf("open connection still works after Kill: %q", got)
	} else if isTimeout(err) {
		t.Fatalf("open connection hangs after Kill instead of failing: %v", err)
	}
	// New connections are refused.
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err == nil {
		c.Close()
		t.Fatal("dial succeeded while killed")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial error %v, want connection refused", err)
	}
	if p.Active() != 0 {
		t.Errorf("Active = %d after Kill", p.Active())
	}
	// Restore listens on the same address again.
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	mustEcho(t, dial(t, p.Addr()), "back")
}

func TestHangStallsOldAndNewConnections(t *testing.T) {
	p := newProxy(t)
	old := dial(t, p.Addr())
	mustEcho(t, old, "before")
	if err := p.Hang(); err != nil {
		t.Fatal(err)
	}
	if _, err := old.roundTrip("held-old", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("open connection during Hang: %v, want a timeout", err)
	}
	// A new connection is accepted (the dial succeeds) but stalls.
	fresh := dial(t, p.Addr())
	if _, err := fresh.roundTrip("held-new", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("new connection during Hang: %v, want a timeout", err)
	}
	if err := p.Hang(); err != nil { // idempotent
		t.Fatal(err)
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	// The held bytes arrive, in order, then the connections work again.
	for _, tc := range []struct {
		cl   *client
		held string
	}{{old, "held-old"}, {fresh, "held-new"}} {
		tc.cl.c.SetReadDeadline(time.Now().Add(2 * time.Second))
		s, err := tc.cl.r.ReadString('\n')
		if err != nil || s != tc.held+"\n" {
			t.Fatalf("after Restore: got %q, %v; want the held %q", s, err, tc.held)
		}
		mustEcho(t, tc.cl, "after")
	}
}

func TestKillWhileHungAndHangWhileKilled(t *testing.T) {
	p := newProxy(t)
	cl := dial(t, p.Addr())
	if err := p.Hang(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.roundTrip("x", time.Second); err == nil || isTimeout(err) {
		t.Fatalf("hung connection after Kill: %v, want a reset", err)
	}
	// Hang after Kill listens again but stalls.
	if err := p.Hang(); err != nil {
		t.Fatal(err)
	}
	stalled := dial(t, p.Addr())
	if _, err := stalled.roundTrip("y", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("got %v, want a timeout", err)
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	mustEcho(t, dial(t, p.Addr()), "z")
}

func TestRestoreAfterHangThenKill(t *testing.T) {
	p := newProxy(t)
	if err := p.Hang(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	if p.Mode() != Pass {
		t.Fatalf("mode %v", p.Mode())
	}
	mustEcho(t, dial(t, p.Addr()), "flows")
}

func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close() // nothing listens there now
	p, err := New("127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The proxy accepts, fails to reach the target and resets the client:
	// depending on timing the client sees it in the dial or on the first
	// read, but never waits.
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	cl := &client{c: c, r: bufio.NewReader(c)}
	if _, err := cl.roundTrip("x", 2*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("got %v, want the connection closed", err)
	}
}

// nameServer answers every line with its name, until the test ends.
func nameServer(t *testing.T, name string) string {
	return server(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
			if _, err := io.WriteString(c, name+"\n"); err != nil {
				return
			}
		}
	})
}

// TestMoveTo: after a move, new connections reach the new target and open
// ones keep the old one.
func TestMoveTo(t *testing.T) {
	a, b := nameServer(t, "a"), nameServer(t, "b")
	p, err := New("127.0.0.1:0", a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	old := dial(t, p.Addr())
	answer := func(cl *client) string {
		t.Helper()
		got, err := cl.roundTrip("who", 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := answer(old); got != "a" {
		t.Fatalf("before the move: %q", got)
	}
	if err := p.MoveTo(b); err != nil {
		t.Fatal(err)
	}
	if p.Target() != b {
		t.Errorf("Target = %s, want %s", p.Target(), b)
	}
	if got := answer(dial(t, p.Addr())); got != "b" {
		t.Errorf("a new connection after the move reached %q, want b", got)
	}
	if got := answer(old); got != "a" {
		t.Errorf("an old connection after the move reached %q, want a", got)
	}
	p.Close()
	if err := p.MoveTo(a); !errors.Is(err, ErrClosed) {
		t.Errorf("MoveTo after Close: %v, want ErrClosed", err)
	}
}

func TestClose(t *testing.T) {
	p := newProxy(t)
	cl := dial(t, p.Addr())
	mustEcho(t, cl, "x")
	hung := dial(t, p.Addr())
	mustEcho(t, hung, "y")
	if err := p.Hang(); err != nil {
		t.Fatal(err)
	}
	go io.WriteString(hung.c, "stuck\n")
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{p.Kill, p.Hang, p.Restore} {
		if err := f(); !errors.Is(err, ErrClosed) {
			t.Errorf("after Close: %v, want ErrClosed", err)
		}
	}
	if _, err := cl.roundTrip("z", time.Second); err == nil {
		t.Error("connection works after Close")
	}
}

func TestModeString(t *testing.T) {
	for m, want := range map[Mode]string{Pass: "pass", Kill: "kill", Hang: "hang", Mode(7): "Mode(7)"} {
		if m.String() != want {
			t.Errorf("%d: %q, want %q", int(m), m.String(), want)
		}
	}
}
