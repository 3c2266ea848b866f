// Package faultproxy is a small TCP proxy that injects the faults a
// database client meets in production: a server that refuses connections
// (Kill), a server that accepts connections and then stops answering
// (Hang), the recovery from both (Restore), and a server that answers
// late (SetDelay). MoveTo switches its target
// the way failover tooling moves a DNS name, VIP or proxy to a new primary:
// new connections go to the new target, open ones stay with the old one.
//
// The rwpool demo puts one Proxy in front of each embedded server, so that
// rwpool reaches the servers only through the proxies and sees the faults
// exactly as it would see them on a network.
package faultproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is what a Proxy does with connections.
type Mode int

const (
	// Pass forwards bytes both ways.
	Pass Mode = iota
	// Kill refuses new connections (the listening socket is closed, so a
	// dial gets "connection refused") and resets every open one, like a
	// crashed server.
	Kill
	// Hang accepts new connections but forwards no byte, in either
	// direction, on any connection, new or old, like a frozen server whose
	// kernel still completes TCP handshakes.
	Hang
)

// String returns "pass", "kill" or "hang".
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Kill:
		return "kill"
	case Hang:
		return "hang"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ErrClosed is returned by the methods of a closed Proxy.
var ErrClosed = errors.New("faultproxy: proxy closed")

// DialTimeout bounds the proxy's dial to its target.
const DialTimeout = 5 * time.Second

// relistenFor bounds how long Restore retries binding the proxy's address
// after a Kill (the port may linger briefly).
const relistenFor = 3 * time.Second

// Proxy forwards TCP connections from its own loopback address to a target
// address. Its methods are safe for concurrent use.
type Proxy struct {
	addr string // fixed at New: Restore after Kill listens here again

	mu     sync.Mutex
	target string       // where new connections go (MoveTo changes it)
	ln     net.Listener // nil while killed or closed
	mode   Mode
	gate   chan struct{} // closed while bytes may flow
	links  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup // accept loops and link goroutines

	accepted int64 // connections accepted, for tests and stats

	delay atomic.Int64 // ns each server→client chunk is held back (SetDelay)
}

// link is one proxied connection: client side and target side.
type link struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{}
}

// close closes both sides; reset makes the client side send a TCP RST.
func (l *link) close(reset bool) {
	l.once.Do(func() {
		close(l.done)
		if tc, ok := l.client.(*net.TCPConn); ok && reset {
			tc.SetLinger(0)
		}
		l.client.Close()
		if l.server != nil {
			l.server.Close()
		}
	})
}

// New starts a proxy listening on listen (for example "127.0.0.1:0" for a
// free loopback port) that forwards to target, in mode Pass.
func New(listen, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	gate := make(chan struct{})
	close(gate)
	p := &Proxy{target: target, addr: ln.Addr().String(), ln: ln, gate: gate, links: map[*link]struct{}{}}
	p.serve(ln)
	return p, nil
}

// Addr returns the proxy's listening address, host:port. It does not
// change across Kill and Restore.
func (p *Proxy) Addr() string { return p.addr }

// Target returns the address the proxy forwards new connections to.
func (p *Proxy) Target() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}

// MoveTo makes new connections go to target. Connections already open,
// even those still dialling, stay with the target of the moment they were
// accepted, as after a DNS change or a moved VIP.
func (p *Proxy) MoveTo(target string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.target = target
	return nil
}

// SetDelay holds back every server→client chunk read from now on by d
// (0: none), on every connection, open or new, in every mode: a server
// that answers late (a backup, a vacuum, a noisy neighbour, a long
// network path) rather than not at all. Chunks are delivered in order, so
// delays add up on a connection that streams.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(max(d, 0))) }

// Delay returns the delay SetDelay set.
func (p *Proxy) Delay() time.Duration { return time.Duration(p.delay.Load()) }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Accepted returns the number of connections accepted so far.
func (p *Proxy) Accepted() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Active returns the number of connections open now.
func (p *Proxy) Active() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Kill closes the listening socket, so that dials are refused, and resets
// every open connection. Restore undoes it.
func (p *Proxy) Kill() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	if p.mode == Hang {
		close(p.gate) // the gate is open in every mode but Hang
	}
	p.mode = Kill
	ln := p.ln
	p.ln = nil
	links := p.takeLinks()
	p.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for _, l := range links {
		l.close(true)
	}
	return nil
}

// Hang stops forwarding bytes on every connection, open or new; new
// connections are still accepted. Restore undoes it, delivering what was
// held back.
func (p *Proxy) Hang() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.mode == Kill {
		if err := p.listenLocked(); err != nil {
			return err
		}
	}
	if p.mode != Hang {
		p.gate = make(chan struct{})
	}
	p.mode = Hang
	return nil
}

// Restore returns to Pass: after Kill it listens on the same address
// again; after Hang it releases the held bytes.
func (p *Proxy) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	switch p.mode {
	case Kill:
		if err := p.listenLocked(); err != nil {
			return err
		}
	case Hang:
		close(p.gate)
	}
	p.mode = Pass
	return nil
}

// listenLocked binds the proxy's address again after a Kill. p.mu is held.
func (p *Proxy) listenLocked() error {
	deadline := time.Now().Add(relistenFor)
	for {
		ln, err := net.Listen("tcp", p.addr)
		if err == nil {
			p.ln = ln
			p.serve(ln)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("faultproxy: listen again on %s: %w", p.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close stops the proxy and closes every connection. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	ln := p.ln
	p.ln = nil
	links := p.takeLinks()
	if p.mode == Hang {
		close(p.gate) // wake any pipe waiting on the gate; its link is closed
	}
	p.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for _, l := range links {
		l.close(false)
	}
	p.wg.Wait()
	return nil
}

// takeLinks empties the link set and returns what it held. p.mu is held.
func (p *Proxy) takeLinks() []*link {
	out := make([]*link, 0, len(p.links))
	for l := range p.links {
		out = append(out, l)
	}
	clear(p.links)
	return out
}

// serve runs the accept loop of ln until ln is closed.
func (p *Proxy) serve(ln net.Listener) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				return // closed by Kill or Close
			}
			p.handle(c)
		}
	}()
}

// handle registers c and starts forwarding it to the target.
func (p *Proxy) handle(c net.Conn) {
	l := &link{client: c, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.mode == Kill {
		p.mu.Unlock()
		l.close(true)
		return
	}
	p.links[l] = struct{}{}
	p.accepted++
	target := p.target
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		defer p.forget(l)
		s, err := dialUntil(target, l.done)
		if err != nil {
			l.close(true)
			return
		}
		p.mu.Lock()
		_, still := p.links[l] // not reset by a Kill or Close meanwhile
		if still {
			l.server = s
		}
		p.mu.Unlock()
		if !still {
			s.Close()
			l.close(true)
			return
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.pipe(l, s, c, false)
		}()
		p.pipe(l, c, s, true)
		wg.Wait()
	}()
}

// forget removes l from the link set and closes it.
func (p *Proxy) forget(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
	l.close(false)
}

// dialUntil dials target, giving up when done is closed.
func dialUntil(target string, done <-chan struct{}) (net.Conn, error) {
	d := net.Dialer{Timeout: DialTimeout}
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := d.Dial("tcp", target)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-done:
		go func() {
			if r := <-ch; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, net.ErrClosed
	}
}

// pipe copies src to dst, waiting at the gate before each write, until
// either side fails or the link closes; fromServer chunks are held back
// by the delay first.
func (p *Proxy) pipe(l *link, dst, src net.Conn, fromServer bool) {
	defer l.close(false)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if fromServer && !p.hold(l) {
				return
			}
			if !p.wait(l) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or error on one side ends the whole link
		}
	}
}

// hold sleeps for the delay set when the chunk arrived. It reports false
// when the link closed meanwhile.
func (p *Proxy) hold(l *link) bool {
	d := time.Duration(p.delay.Load())
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.done:
		return false
	case <-t.C:
		return true
	}
}

// wait blocks while the proxy hangs. It reports false when the link
// closed meanwhile.
func (p *Proxy) wait(l *link) bool {
	for {
		p.mu.Lock()
		gate := p.gate
		p.mu.Unlock()
		select {
		case <-l.done:
			return false
		case <-gate:
			p.mu.Lock()
			same := gate == p.gate
			p.mu.Unlock()
			if same {
				return true
			}
			// Restore then Hang again while we slept: wait on the new gate.
		}
	}
}
