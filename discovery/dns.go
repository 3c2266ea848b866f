package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// dnsSource is the dns: and srv: sources.
type dnsSource struct {
	srv  bool
	name string // the name to resolve
	port string // dns: the port given after the name, or ""
	r    *net.Resolver
}

// newDNS parses "NAME[:PORT]" or "//HOST:PORT/NAME[:PORT]" (srv: takes no
// port: its records carry them).
func newDNS(srv bool, target string) (Source, error) {
	s := &dnsSource{srv: srv, r: net.DefaultResolver}
	if rest, ok := strings.CutPrefix(target, "//"); ok {
		server, name, ok := strings.Cut(rest, "/")
		if _, _, err := net.SplitHostPort(server); !ok || err != nil {
			return nil, errors.New("discovery: dns: want //HOST:PORT/NAME for a DNS server of your own")
		}
		var d net.Dialer
		s.r = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, server)
		}}
		target = name
	}
	s.name = target
	if !srv {
		if h, p, err := net.SplitHostPort(target); err == nil {
			if _, err := strconv.ParseUint(p, 10, 16); err != nil {
				return nil, errors.New("discovery: dns: invalid port " + strconv.Quote(p))
			}
			s.name, s.port = h, p
		}
	}
	if s.name == "" || strings.ContainsAny(s.name, " /:") {
		return nil, errors.New("discovery: dns: want a DNS name")
	}
	return s, nil
}

func (s *dnsSource) Members(ctx context.Context) ([]Member, error) {
	if !s.srv {
		addrs, err := s.r.LookupHost(ctx, s.name)
		if err != nil {
			return nil, fmt.Errorf("discovery: dns %s: %w", s.name, err)
		}
		return members(addrs, s.port), nil
	}
	_, recs, err := s.r.LookupSRV(ctx, "", "", s.name)
	if err != nil {
		return nil, fmt.Errorf("discovery: srv %s: %w", s.name, err)
	}
	var out []Member
	for _, rec := range recs {
		// One replica per address, as for dns: a target name may stand
		// for several servers, and the driver must not pick one of them
		// at each dial.
		addrs, err := s.r.LookupHost(ctx, strings.TrimSuffix(rec.Target, "."))
		if err != nil {
			return nil, fmt.Errorf("discovery: srv %s: target %s: %w", s.name, rec.Target, err)
		}
		out = append(out, members(addrs, strconv.Itoa(int(rec.Port)))...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func members(addrs []string, port string) []Member {
	out := make([]Member, 0, len(addrs))
	for _, a := range addrs {
		name := a
		if port != "" {
			name = net.JoinHostPort(a, port)
		}
		out = append(out, Member{Name: name, Host: a, Port: port})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
