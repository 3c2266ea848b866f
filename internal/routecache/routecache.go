// Package routecache remembers the routing decisions of repeated
// statements, so that the statements an application repeats (an ORM's, a
// prepared query's) are classified once.
package routecache

import (
	"hash/maphash"
	"strings"
	"sync/atomic"

	"github.com/rwpool/rwpool/routing"
)

// MaxLen is the longest statement a Cache keeps: longer ones are rare,
// classified each time, and not worth the memory.
const MaxLen = 2048

// Cache remembers the Decisions of recent statements, keyed by their text:
// a hit costs a hash of the text and one comparison with it, a fraction of
// a scan. It holds no global state: each rwpool Connector has its own. A
// Cache is safe for concurrent use.
//
// It is a fixed table of slots, one statement each. A statement enters it
// on its second sighting in its slot, so one-off statements (SQL with
// inlined values) never allocate; a statement that has entered replaces the
// slot's previous one. A hit compares the whole text, so two statements
// whose hashes collide never share a Decision.
type Cache struct {
	dialect routing.Dialect
	seed    maphash.Seed
	mask    uint64
	slots   []atomic.Pointer[entry]
	seen    []atomic.Uint64 // per slot: the hash of the last statement that missed there
}

type entry struct {
	query string
	d     routing.Decision
}

// New returns a Cache of at least size slots (rounded up to a power of
// two, at least 1) for statements of dialect d.
func New(d routing.Dialect, size int) *Cache {
	n := 1
	for n < size {
		n <<= 1
	}
	return &Cache{
		dialect: d,
		seed:    maphash.MakeSeed(),
		mask:    uint64(n - 1),
		slots:   make([]atomic.Pointer[entry], n),
		seen:    make([]atomic.Uint64, n),
	}
}

// Classify returns routing.Classify(query, dialect), from the cache when
// it can.
func (c *Cache) Classify(query string) routing.Decision {
	if len(query) > MaxLen {
		return routing.Classify(query, c.dialect)
	}
	h := maphash.String(c.seed, query)
	i := h & c.mask
	if e := c.slots[i].Load(); e != nil && e.query == query {
		return e.d
	}
	d := routing.Classify(query, c.dialect)
	if c.seen[i].Swap(h) == h {
		// A copy, so the cache never pins a larger buffer the caller's
		// string may be a slice of.
		c.slots[i].Store(&entry{query: strings.Clone(query), d: d})
	}
	return d
}
