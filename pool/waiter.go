package pool

import "time"

// handoff is what a waiter receives: a connection that stays in use (c),
// a reserved slot to dial into (dial), or an error (err, pool closed).
type handoff struct {
	c    *Conn
	dial bool
	gen  uint64 // with dial: generation of the connection to dial
	err  error
}

// waiter is one Acquire call waiting for a hand-off. Waiters are recycled
// through Pool.freeWaiters, so a channel and timer are allocated only the
// first time the pool needs that many waiters at once.
type waiter struct {
	ch         chan handoff // capacity 1; sent to only under Pool.mu, once per wait
	timer      *time.Timer  // AcquireTimeout; stopped when not waiting
	prev, next *waiter      // waiterList links, valid while queued
	queued     bool
}

// waiterList is an intrusive FIFO of waiters: O(1) push, pop and removal
// of a waiter that gave up.
type waiterList struct {
	head, tail *waiter
	len        int
}

func (l *waiterList) pushBack(w *waiter) {
	w.prev, w.next, w.queued = l.tail, nil, true
	if l.tail == nil {
		l.head = w
	} else {
		l.tail.next = w
	}
	l.tail = w
	l.len++
}

func (l *waiterList) remove(w *waiter) {
	if w.prev == nil {
		l.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		l.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
	l.len--
}

// popFront removes and returns the oldest waiter, or nil.
func (l *waiterList) popFront() *waiter {
	w := l.head
	if w != nil {
		l.remove(w)
	}
	return w
}

// getWaiterLocked returns a recycled or new waiter; p.mu must be held.
func (p *Pool) getWaiterLocked() *waiter {
	if n := len(p.freeWaiters); n > 0 {
		w := p.freeWaiters[n-1]
		p.freeWaiters[n-1] = nil
		p.freeWaiters = p.freeWaiters[:n-1]
		return w
	}
	w := &waiter{ch: make(chan handoff, 1)}
	if p.cfg.AcquireTimeout > 0 {
		w.timer = time.NewTimer(p.cfg.AcquireTimeout)
		w.timer.Stop()
	}
	return w
}

// putWaiterLocked recycles w, whose channel must be empty and timer stopped.
func (p *Pool) putWaiterLocked(w *waiter) {
	p.freeWaiters = append(p.freeWaiters, w)
}
