package routing

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// MaxCachedLen is the longest statement a Cache keeps: longer ones are
// rare, classified each time, and not worth the memory.
const MaxCachedLen = 2048

// Cache remembers the Decisions of recent statements, keyed by their
// text, so that the statements an application repeats (an ORM's, a
// prepared query's) are classified once: a hit costs a hash of the text and
// one comparison with it, a fraction of a scan. It holds no global state:
// each rwpool Connector has its own. A Cache is safe for concurrent use.
//
// It is a fixed table of slots, one statement each. A statement enters it
// on its second sighting in its slot, so one-off statements (SQL with
// inlined values) never allocate; a statement that has entered replaces the
// slot's previous one. A hit compares the whole text, so two statements
// whose hashes collide never share a Decision.
type Cache struct {
	dialect Dialect
	seed    maphash.Seed
	mask    uint64
	slots   []atomic.Pointer[cacheEntry]
	seen    []atomic.Uint64 // per slot: the hash of the last statement that missed there
}

type cacheEntry struct {
	query string
	d     Decision
}

// NewCache returns a Cache of at least size slots (rounded up to a power of
// two, at least 1) for statements of dialect d.
func NewCache(d Dialect, size int) *Cache {
	n := 1
	for n < size {
		n <<= 1
	}
	return &Cache{
		dialect: d,
		seed:    maphash.MakeSeed(),
		mask:    uint64(n - 1),
		slots:   make([]atomic.Pointer[cacheEntry], n),
		seen:    make([]atomic.Uint64, n),
	}
}

// Classify returns Classify(query, dialect), from the cache when it can.
func (c *Cache) Classify(query string) Decision {
	if len(query) > MaxCachedLen {
		return Classify(query, c.dialect)
	}
	h := maphash.String(c.seed, query)
	i := h & c.mask
	if e := c.slots[i].Load(); e != nil && e.query == query {
		return e.d
	}
	d := Classify(query, c.dialect)
	if c.seen[i].Swap(h) == h {
		// A copy, so the cache never pins a larger buffer the caller's
		// string may be a slice of.
		c.slots[i].Store(&cacheEntry{query: strings.Clone(query), d: d})
	}
	return d
}
