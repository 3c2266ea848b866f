package dsn

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/rwpool/rwpool/internal/ascii"
)

// Discovery is a source of replicas found at run time (key discover), besides
// or instead of the replica items:
//
//	discover='srv:_postgresql._tcp.shop-replicas.default.svc.cluster.local' every=5s
//	discover='dns://127.0.0.1:8600/shop-replica.service.consul:5432' name=consul weight=2
//	discover='patroni:http://10.0.0.1:8008,http://10.0.0.2:8008'
//
// Every replica a source finds is reached with the primary's node DSN
// pointed at the replica's address (Node.WithAddress): the same user,
// password, database and TLS settings, as in the clusters Patroni, an
// operator or a Kubernetes StatefulSet builds. The replica's node name is
// the source's name, a slash and the member ("srv/10.0.0.7:5432",
// "patroni/pg2").
type Discovery struct {
	// Source says where replicas are found, as "scheme:target". The
	// driver knows two schemes; a package can register others with
	// rwpool/discovery.Register (rwpool/discovery/patroni registers
	// "patroni"):
	//
	//	dns:NAME[:PORT]   every address NAME resolves to (A and AAAA) is a
	//	                  replica, at PORT or the primary DSN's port
	//	srv:NAME          every target of NAME's SRV records, at its port
	//
	// Either may name the DNS server to ask instead of the system's, as
	// "dns://HOST:PORT/NAME" (Consul's agent answers on 127.0.0.1:8600).
	Source string
	// Name names the source in node names, events and stats; default the
	// source's scheme ("srv", "patroni"). Names are unique across
	// discover items.
	Name string
	// Weight is every replica's weight, as a replica item's (0: spares).
	Weight int
	// Every is how often the source is asked again (every, default 10s).
	Every time.Duration
}

// MaxDiscover is the largest accepted number of discover items.
const MaxDiscover = 16

// defaultEvery is a Discovery's default Every: often enough that a replica
// an operator adds serves within seconds, rarely enough that a DNS server
// or Patroni's REST API never notices rwpool.
const defaultEvery = 10 * time.Second

// Scheme returns the scheme of d's Source: "dns", "srv", "patroni", …; ""
// when Source has none.
func (d Discovery) Scheme() string {
	s, _, ok := strings.Cut(d.Source, ":")
	if !ok || !ascii.IsScheme(s) {
		return ""
	}
	return s
}

// Target returns what follows the scheme and its colon in d's Source.
func (d Discovery) Target() string {
	_, t, _ := strings.Cut(d.Source, ":")
	return t
}

// DisplayName returns d's Name, or its default: the source's scheme.
func (d Discovery) DisplayName() string {
	if d.Name != "" {
		return d.Name
	}
	return d.Scheme()
}

// Redacted returns d's Source with any password replaced by "***": a
// source's target may hold URLs with credentials (Patroni's REST API
// behind basic authentication), redacted one by one (Redact).
func (d Discovery) Redacted() string {
	scheme, target, ok := strings.Cut(d.Source, ":")
	if !ok {
		return Redact(d.Source)
	}
	// A list of URLs is cut only where a ',' starts another URL: a
	// password may hold a ',' of its own.
	var b strings.Builder
	b.WriteString(scheme + ":")
	for start, i := 0, 0; i <= len(target); i++ {
		if i == len(target) || target[i] == ',' && startsURL(target[i+1:]) {
			b.WriteString(Redact(target[start:i]))
			if i < len(target) {
				b.WriteByte(',')
			}
			start = i + 1
		}
	}
	return b.String()
}

// startsURL reports whether s starts with "scheme://".
func startsURL(s string) bool {
	return formOf(s) == formURL
}

// discover handles a discover item and its attributes.
func (p *parser) discover(it item) error {
	c := p.c
	if len(c.Discover) >= MaxDiscover {
		return newErr(keyDiscover, it.off, "too many discover items (maximum "+strconv.Itoa(MaxDiscover)+")")
	}
	d := Discovery{Source: it.val.text, Weight: defaultWeight, Every: defaultEvery}
	seen := map[string]bool{}
	for _, a := range it.attrs {
		if seen[a.key] {
			return newErr(a.key, a.off, "duplicate discover attribute")
		}
		seen[a.key] = true
		switch a.key {
		case attrName:
			if a.val.text == "" {
				return newErr(attrName, a.off, "must not be empty")
			}
			d.Name = a.val.text
		case attrWeight:
			w, err := strconv.Atoi(a.val.text)
			if err != nil {
				msg := "must be an integer"
				if errors.Is(err, strconv.ErrRange) {
					msg = "out of range, got " + quoteShort(a.val.text)
				}
				return newErr(attrWeight, a.off, msg)
			}
			d.Weight = w
		case attrEvery:
			v, err := parseDuration(attrEvery, a.val)
			if err != nil {
				return err
			}
			d.Every = v
		}
	}
	c.Discover = append(c.Discover, d)
	return nil
}

// validateDiscover checks the discover items: a scheme and a target, a
// weight in range, a positive Every, unique names that no node name can
// contain.
func (c *Config) validateDiscover() error {
	if len(c.Discover) > MaxDiscover {
		return newErr(keyDiscover, -1, "too many discover items (maximum "+strconv.Itoa(MaxDiscover)+")")
	}
	names := make(map[string]bool, len(c.Discover))
	for _, d := range c.Discover {
		if d.Scheme() == "" || d.Target() == "" {
			// Never quote the source: it may hold a password.
			return newErr(keyDiscover, -1, "want scheme:target (for example srv:_postgresql._tcp.db.svc or dns:db-replicas:5432)")
		}
		if ascii.HasControl(d.Source) {
			return newErr(keyDiscover, -1, "source contains a control character")
		}
		if msg := weightProblem(d.Weight); msg != "" {
			return newErr(attrWeight, -1, msg)
		}
		if d.Every <= 0 {
			return newErr(attrEvery, -1, "must be positive, got "+d.Every.String())
		}
		n := d.DisplayName()
		if ascii.HasControl(n) || strings.Contains(n, "/") {
			return newErr(attrName, -1, "discover name "+quoteShort(n)+" contains a control character or '/'")
		}
		if names[n] {
			return newErr(attrName, -1, "duplicate discover name "+quoteShort(n)+" (give each source its own name=)")
		}
		names[n] = true
	}
	return nil
}

// writeDiscover writes ";discover='source' [weight=w] [name=n] [every=d]".
func writeDiscover(b *strings.Builder, d Discovery, redact bool) {
	b.WriteString(";" + keyDiscover + "=")
	s := d.Source
	if redact {
		s = d.Redacted()
	}
	writeQuoted(b, s)
	if d.Weight != defaultWeight {
		b.WriteString(" weight=" + strconv.Itoa(d.Weight))
	}
	if d.Name != "" {
		b.WriteString(" name=")
		writeValue(b, d.Name)
	}
	if d.Every != defaultEvery {
		b.WriteString(" every=" + d.Every.String())
	}
}
