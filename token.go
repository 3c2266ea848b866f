package rwpool

import (
	"context"
	"fmt"

	"github.com/rwpool/rwpool/internal/replication"
	"github.com/rwpool/rwpool/internal/token"
)

// SessionToken returns an opaque token for the causal position of the
// session ctx carries: every write it made, every token it resumed, and
// what its reads saw. Hand it to another request, job, process or
// service, which resumes it with WithSessionToken: reads there see what
// this session wrote and read. It returns "" when ctx carries no session
// or the session has no position yet.
//
// A write whose position is not known yet (its rows are still open, or
// reading its position failed) is resolved here, by reading the
// primary's current position (one round trip, bounded by probe_timeout
// when ctx has no deadline); if that fails, the token says a write is
// pending, and the session that resumes it asks its own primary at its
// first read (one byte more).
// What the session's reads saw is covered by the primary's position at
// the end of its last read or later, as monotonic reads bound it: free
// when such a position is known already (the health checker's, another
// read's), else the same round trip, shared; if that fails, the token
// says so the same way.
//
// Tokens are short (PostgreSQL: at most 28 characters; MariaDB with one
// replication domain: at most 48), URL-, header- and cookie-safe, and
// carry a replication position and a hash of the cluster's identity
// (PostgreSQL's system identifier): no DSN, host name or secret.
//
//	ctx = rwpool.WithSession(ctx)
//	if _, err := db.ExecContext(ctx, "INSERT INTO orders …"); err != nil { … }
//	job.Token = rwpool.SessionToken(ctx) // travels with the job
func SessionToken(ctx context.Context) string {
	s := optsOf(ctx).session
	if s == nil {
		return ""
	}
	s.mu.Lock()
	c, pending := s.c, s.pending
	read, lastEnd := s.last != nil && s.lastEnd.After(s.seenAt), s.lastEnd
	s.mu.Unlock()
	unbounded := false // what the session's last reads saw could not be bounded
	if c != nil && c.cfg.ReadYourWrites == 0 {
		switch {
		case pending > 0:
			// The primary's current position covers the pending writes
			// and whatever the session's reads showed.
			if p, err := c.primaryPosition(ctx); err == nil {
				s.resolved(p, pending)
				s.sawUpTo(p, lastEnd)
			}
		case read:
			if p, err := c.primarySince(ctx, lastEnd); err == nil {
				s.sawUpTo(p, lastEnd)
			} else {
				unbounded = true
			}
		}
	}
	s.mu.Lock()
	pos, cluster, kind := s.target.Merge(s.seen), s.cluster, s.kind
	// A pending write still unresolved (the primary could not be asked:
	// it is down or hung, the DB is closing, or the session only resumed
	// a pending token), or reads whose view could not be bounded, travel
	// as a pending write: whoever resumes the token asks its primary at
	// its first read, whose position then covers them, as this session
	// would have. Leaving them out would hand on a token whose reads miss
	// them. (With read_your_writes the session's own writes leave nothing
	// pending: a pending write there is a resumed token's, handed on as it
	// came.)
	unresolved := unbounded || s.pending > 0
	s.mu.Unlock()
	if pos.IsZero() && !unresolved {
		return ""
	}
	if c != nil {
		if tag := c.clusterTag(ctx); tag != 0 {
			cluster = tag
		}
		if f := replication.Flavor(c.flav.Load()); f != replication.Unknown {
			kind = f
		}
	}
	// A token with no position carries its kind of server in its flags,
	// so that it is refused on another kind as one with a position is.
	return token.Encode(token.Token{Cluster: cluster, Pos: pos, Pending: unresolved, Flavor: kind})
}

// WithSessionToken returns a context whose session (ctx's own if it
// carries one, else a new one, as WithSession makes) has at least the
// token's position: its reads see everything the token's session had
// written or read. Several tokens merge to their newest. "" is accepted
// and changes nothing.
//
// A token that is not one (malformed, truncated, altered, over 4 KiB, of
// an unknown version) returns an error wrapping ErrInvalidToken. A token
// of another cluster, or of another kind of server, is found at the
// session's first read on this one, which then fails with an error
// wrapping ErrInvalidToken: the cluster's identity is the server's to
// say, and a context belongs to no database until it is used.
//
// A token made before a promotion keeps working after it: its reads see
// the writes that survived. One that names writes the promotion lost
// (acknowledged by the old primary, never replicated) does not make reads
// wait for them forever: the read that finds the primary behind the token
// is served per causal_fallback, and the session's position is rebased to
// the new primary's.
//
//	ctx, err := rwpool.WithSessionToken(r.Context(), r.Header.Get("X-Session-Token"))
//	if err != nil { … } // ErrInvalidToken: ignore the header, or reject the request
//	db.QueryRowContext(ctx, "SELECT status FROM orders WHERE id = $1", id).Scan(&status)
func WithSessionToken(ctx context.Context, tok string) (context.Context, error) {
	if tok == "" {
		return ctx, nil
	}
	t, err := token.Decode(tok)
	if err != nil {
		return ctx, fmt.Errorf("%w (%d characters): %w", ErrInvalidToken, len(tok), err)
	}
	ctx = WithSession(ctx)
	s := optsOf(ctx).session
	s.resume(t)
	return ctx, nil
}

// resume merges a token into the session.
func (s *session) resume(t token.Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cluster != 0 && t.Cluster != 0 && s.cluster != t.Cluster {
		s.foreign = true // tokens of two clusters: the first read says so
	}
	if t.Cluster != 0 {
		s.cluster = t.Cluster
	}
	if s.kind != replication.Unknown && t.Flavor != replication.Unknown && s.kind != t.Flavor {
		s.foreign = true // a pending token whose maker knew no kind of server has none to differ
	}
	if t.Flavor != replication.Unknown {
		s.kind = t.Flavor
	}
	s.target = s.target.Merge(t.Pos)
	if t.Pending && s.pending == 0 {
		// The token's session wrote what its position does not cover:
		// the first read asks the primary (planRead), as for the
		// session's own pending writes. One pending write stands for
		// any number: the primary's position covers them all.
		s.pending = 1
	}
	s.resumed = true
}

// clusterTag returns the tag of the cluster c reaches, read once from the
// primary (PostgreSQL's system identifier; 0 where the server offers no
// identity, or while it cannot be read).
func (c *Connector) clusterTag(ctx context.Context) uint32 {
	if p := c.clusterID.Load(); p != nil {
		return *p
	}
	n := c.primaryNode()
	pc, err := n.acquire(ctx)
	if err != nil {
		return 0
	}
	ctx, cancel := boundCtx(ctx, c.cfg.ProbeTimeout)
	defer cancel()
	q := replication.ClusterQuery(c.flavor(ctx, pc.Raw()))
	var id string
	if q != "" {
		var v any
		if v, err = c.queryValue(ctx, pc, q); err == nil {
			id = stringOf(v)
		}
	}
	if err != nil {
		id = ""
	}
	out, err := n.settle(ctx, pc, err)
	if err != nil && out != finished {
		return 0 // the connection failed: ask again next time
	}
	// A server that answered, even with an error (no such function, no
	// privilege), has told what it will tell: no identity is 0, for good.
	tag := token.ClusterTag(id)
	c.clusterID.Store(&tag)
	return tag
}
