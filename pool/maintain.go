package pool

import "time"

// maintain is the pool's one background goroutine. Each tick (see
// Config.maintainInterval), and when kicked by DiscardIdle, it reaps expired
// idle connections and then dials until MinIdle are idle. After a failed
// dial it leaves filling alone for a backoff that doubles from 100ms to 5s.
func (p *Pool) maintain() {
	defer close(p.done)
	interval := p.cfg.maintainInterval()
	t := time.NewTimer(interval)
	defer t.Stop()
	var (
		backoff time.Duration
		retryAt time.Time
	)
	for {
		p.reap()
		if backoff == 0 || !time.Now().Before(retryAt) {
			if p.fill() {
				backoff = 0
			} else {
				backoff = min(max(2*backoff, minDialBackoff), maxDialBackoff)
				retryAt = time.Now().Add(backoff)
			}
		}
		wait := interval
		if backoff > 0 {
			wait = min(wait, time.Until(retryAt))
		}
		t.Reset(wait)
		select {
		case <-p.stop:
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

// reap closes idle connections past MaxLifetime, then those idle longer
// than IdleTimeout, least recently used first, keeping MinIdle.
func (p *Pool) reap() {
	if !p.clocked {
		return
	}
	now := p.now()
	p.mu.Lock()
	p.observeLocked(now)
	if p.closed || len(p.idle) == 0 {
		p.mu.Unlock()
		return
	}
	out := p.reapBuf[:0]
	if p.lifetime > 0 {
		keep := p.idle[:0]
		for _, c := range p.idle {
			if now-c.created >= p.lifetime {
				out = append(out, c)
				p.stats.closedLifetime++
				continue
			}
			keep = append(keep, c)
		}
		clear(p.idle[len(keep):])
		p.idle = keep
	}
	if p.idleTTL > 0 {
		// The stack is ordered by release time, oldest at the bottom.
		n := 0
		for n < len(p.idle)-p.cfg.MinIdle && now-p.idle[n].lastUsed >= p.idleTTL {
			n++
		}
		out = append(out, p.idle[:n]...)
		p.stats.closedIdle += int64(n)
		m := copy(p.idle, p.idle[n:])
		clear(p.idle[m:])
		p.idle = p.idle[:m]
	}
	for _, c := range out {
		p.retireLocked(c)
	}
	p.reapBuf = out
	p.mu.Unlock()
	p.closeConns(out)
	clear(out)
}

// fill dials, one at a time, until MinIdle connections are idle (or handed
// to waiters), the pool is full, or the dial cap is reached. It reports
// false if a dial failed.
func (p *Pool) fill() bool {
	for {
		select {
		case <-p.stop:
			return true
		default:
		}
		p.mu.Lock()
		if p.closed || len(p.idle) >= p.cfg.MinIdle || !p.canDialLocked() {
			p.mu.Unlock()
			return true
		}
		gen := p.reserveDialLocked()
		p.mu.Unlock()

		c, err := p.connect(p.dialCtx, gen)

		p.mu.Lock()
		p.dialing--
		p.stats.dials++
		if err != nil {
			p.numOpen--
			closed := p.closed
			if !closed {
				p.stats.dialErrors++
			}
			p.grantLocked()
			p.mu.Unlock()
			return closed
		}
		if p.closed || gen != p.gen {
			p.retireLocked(c)
			p.mu.Unlock()
			p.closeConn(c)
			continue
		}
		p.observeLocked(c.created)
		p.putLocked(c)
		p.grantLocked()
		p.mu.Unlock()
	}
}
