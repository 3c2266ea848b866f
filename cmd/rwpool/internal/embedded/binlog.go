package embedded

import (
	"sync"
	"time"
)

// binlog is the primary's statement log, kept in memory. Entries every
// replica applied are dropped.
type binlog struct {
	mu      sync.Mutex // also serializes writes on the primary
	base    int64      // log position of entries[0]
	entries []entry
	changed chan struct{} // closed and replaced on every append
	readers []*applier
}

type entry struct {
	query string
	at    time.Time // when the primary executed it
}

func newBinlog() *binlog { return &binlog{changed: make(chan struct{})} }

func (l *binlog) register(a *applier) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.readers = append(l.readers, a)
}

// appendLocked logs a statement; l.mu is held.
func (l *binlog) appendLocked(q string) {
	l.entries = append(l.entries, entry{query: q, at: time.Now()})
	close(l.changed)
	l.changed = make(chan struct{})
	if len(l.entries) >= 4096 {
		l.trimLocked()
	}
}

// trimLocked drops the entries every replica applied.
func (l *binlog) trimLocked() {
	low := l.base + int64(len(l.entries))
	for _, a := range l.readers {
		low = min(low, a.position())
	}
	if n := low - l.base; n > 0 {
		l.entries = append([]entry(nil), l.entries[n:]...)
		l.base = low
	}
}

// end returns the position after the last entry.
func (l *binlog) end() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.base + int64(len(l.entries))
}

// at returns the entry at pos, if logged yet, or a channel closed at the
// next append.
func (l *binlog) at(pos int64) (entry, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := pos - l.base; i >= 0 && i < int64(len(l.entries)) {
		return l.entries[i], true, nil
	}
	return entry{}, false, l.changed
}

// applier applies the log to one replica, in order.
type applier struct {
	srv  *Server
	log  *binlog
	lag  time.Duration
	stop <-chan struct{}

	mu  sync.Mutex
	pos int64 // next position to apply
	err error // last apply error (the demo's statements never fail)
}

func (a *applier) position() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pos
}

func (a *applier) run() {
	for {
		pos := a.position()
		e, ok, changed := a.log.at(pos)
		if !ok {
			select {
			case <-a.stop:
				return
			case <-changed:
				continue
			}
		}
		if wait := time.Until(e.at.Add(a.lag)); wait > 0 {
			select {
			case <-a.stop:
				return
			case <-time.After(wait):
			}
		}
		err := a.srv.exec(e.query)
		a.mu.Lock()
		a.pos++
		if err != nil {
			a.err = err
		}
		a.mu.Unlock()
	}
}
