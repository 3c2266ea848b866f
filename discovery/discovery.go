// Package discovery finds replicas at run time for rwpool: a DSN's discover
// items (dsn.Discovery) name a source by its scheme, and the Connector asks
// it again every few seconds. Replicas that appear join the reads once
// their first probe answers; replicas that disappear drain.
//
// Two sources are built in, with the standard library's resolver:
//
//	dns:NAME[:PORT]   every address NAME resolves to is a replica
//	srv:NAME          every target of NAME's SRV records, at its port
//
// Either may name the DNS server to ask, as dns://HOST:PORT/NAME (Consul's
// agent answers on 127.0.0.1:8600). Kubernetes headless services answer
// both: an A record per ready pod, and SRV records per named port.
//
// Other sources register a scheme, as database/sql drivers do, from a
// package the program imports for its side effect:
//
//	import _ "github.com/rwpool/rwpool/discovery/patroni" // "patroni:"
//
// so that the driver package carries no HTTP client of its own.
package discovery

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/rwpool/rwpool/internal/ascii"
)

// Member is one replica a Source found.
type Member struct {
	// Name identifies the member within its source, stably across
	// answers: "10.0.0.7:5432" for DNS, the member's name for Patroni. A
	// member whose Name changes is a member that left and one that came.
	Name string
	// Host and Port are where the replica listens; Port "" keeps the
	// primary DSN's port.
	Host, Port string
}

// Source lists the replicas of a cluster.
type Source interface {
	// Members returns the replicas now. An error, or an answer with no
	// member, keeps the replicas of the last good answer: a source that
	// fails never empties the reads.
	Members(ctx context.Context) ([]Member, error)
}

// Opener makes the Source a discover item's target names (what follows
// "scheme:" in the source).
type Opener func(target string) (Source, error)

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes a scheme of discover items available, as sql.Register
// makes a driver available: call it from an init function. It panics if
// open is nil, if the scheme is not a lower-case URL scheme, or if it is
// registered twice (dns and srv are built in).
func Register(scheme string, open Opener) {
	if open == nil {
		panic("discovery: Register opener is nil")
	}
	// Lower case only, RFC 3986's canonical form: Open looks a scheme up
	// exactly as the DSN spells it, so each scheme has one spelling, the
	// documented one. (dsn accepts a scheme in any case and keeps it as
	// written; Open answers ErrUnknownScheme for one not in lower case.)
	if !ascii.IsLowerScheme(scheme) {
		panic("discovery: invalid scheme " + fmt.Sprintf("%q", scheme))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[scheme]; dup || scheme == "dns" || scheme == "srv" {
		panic("discovery: Register called twice for scheme " + scheme)
	}
	openers[scheme] = open
}

// Schemes returns the schemes that can be opened, sorted.
func Schemes() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := []string{"dns", "srv"}
	for s := range openers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// ErrUnknownScheme is wrapped by Open's error for a scheme nobody
// registered.
var ErrUnknownScheme = errors.New("unknown discovery scheme")

// Open returns the Source of a discover item's source, "scheme:target".
// Its errors never quote the target, which may hold a password.
func Open(source string) (Source, error) {
	scheme, target, ok := strings.Cut(source, ":")
	if !ok || target == "" {
		return nil, errors.New("discovery: want scheme:target")
	}
	switch scheme {
	case "dns", "srv":
		return newDNS(scheme == "srv", target)
	}
	mu.RLock()
	open := openers[scheme]
	mu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("discovery: %w %q (registered: %s; forgotten import of its package?)",
			ErrUnknownScheme, scheme, strings.Join(Schemes(), ", "))
	}
	return open(target)
}
