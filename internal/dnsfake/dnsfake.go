// Package dnsfake is a DNS server on loopback for rwpool's tests: it
// answers A, AAAA and SRV questions from tables a test changes while it
// runs, or fails every question (SERVFAIL) on demand, as a DNS server, a
// Kubernetes headless service or Consul's agent would for rwpool's dns:
// and srv: discovery sources.
package dnsfake

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/net/dns/dnsmessage"
)

// SRV is one SRV record's target and port.
type SRV struct {
	Target string
	Port   uint16
}

// Server answers DNS questions over UDP on 127.0.0.1.
type Server struct {
	pc      net.PacketConn
	mu      sync.Mutex
	a       map[string][]net.IP
	srv     map[string][]SRV
	fail    atomic.Bool
	queries atomic.Int64
	done    chan struct{}
}

// Start starts a Server on a free UDP port of 127.0.0.1.
func Start() (*Server, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{pc: pc, a: map[string][]net.IP{}, srv: map[string][]SRV{}, done: make(chan struct{})}
	go s.serve()
	return s, nil
}

// Addr returns the server's address, HOST:PORT.
func (s *Server) Addr() string { return s.pc.LocalAddr().String() }

// Queries returns how many questions the server answered.
func (s *Server) Queries() int64 { return s.queries.Load() }

// SetA makes name resolve to ips (none: the name does not exist).
func (s *Server) SetA(name string, ips ...string) {
	var out []net.IP
	for _, ip := range ips {
		out = append(out, net.ParseIP(ip))
	}
	s.mu.Lock()
	s.a[fqdn(name)] = out
	s.mu.Unlock()
}

// SetSRV sets name's SRV records (none: the name does not exist).
func (s *Server) SetSRV(name string, recs ...SRV) {
	s.mu.Lock()
	s.srv[fqdn(name)] = recs
	s.mu.Unlock()
}

// SetFail makes every answer SERVFAIL (on) or normal again (off).
func (s *Server) SetFail(on bool) { s.fail.Store(on) }

// Close stops the server and waits for it.
func (s *Server) Close() {
	s.pc.Close()
	<-s.done
}

func fqdn(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) + "." }

func (s *Server) serve() {
	defer close(s.done)
	buf := make([]byte, 1500)
	for {
		n, from, err := s.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if out, ok := s.answer(buf[:n]); ok {
			s.queries.Add(1)
			s.pc.WriteTo(out, from)
		}
	}
}

// answer builds the reply to one question.
func (s *Server) answer(msg []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	name := strings.ToLower(q.Name.String())
	s.mu.Lock()
	ips, hasA := s.a[name]
	recs, hasSRV := s.srv[name]
	s.mu.Unlock()
	switch {
	case s.fail.Load():
		rh.RCode = dnsmessage.RCodeServerFailure
	case !hasA && !hasSRV:
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if rh.RCode == dnsmessage.RCodeSuccess {
		rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
		switch q.Type {
		case dnsmessage.TypeA:
			for _, ip := range ips {
				if v4 := ip.To4(); v4 != nil {
					var a [4]byte
					copy(a[:], v4)
					if b.AResource(rr, dnsmessage.AResource{A: a}) != nil {
						return nil, false
					}
				}
			}
		case dnsmessage.TypeAAAA:
			for _, ip := range ips {
				if ip.To4() == nil {
					var a [16]byte
					copy(a[:], ip)
					if b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: a}) != nil {
						return nil, false
					}
				}
			}
		case dnsmessage.TypeSRV:
			for _, r := range recs {
				t, err := dnsmessage.NewName(fqdn(r.Target))
				if err != nil {
					return nil, false
				}
				if b.SRVResource(rr, dnsmessage.SRVResource{Priority: 1, Weight: 1, Port: r.Port, Target: t}) != nil {
					return nil, false
				}
			}
		}
	}
	out, err := b.Finish()
	return out, err == nil
}
