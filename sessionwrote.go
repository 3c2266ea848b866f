package rwpool

import "context"

// SessionWrote reports whether the session ctx carries has written: a
// statement routed as a write ran with it, or a transaction it wrote in
// committed (or ended in a commit whose outcome is unknown). Tokens
// resumed into the session do not count, nor do its reads. It is false
// when ctx carries no session.
//
// It tells a caller that hands SessionToken on whether there is anything
// new to hand on. A session's token also moves with what its reads saw
// (see SessionToken), so comparing tokens alone would hand one back after
// nearly every read; package rwhttp sets a token on a response only when
// the request wrote:
//
//	if rwpool.SessionWrote(ctx) {
//		w.Header().Set("X-Rwpool-Session", rwpool.SessionToken(ctx))
//	}
func SessionWrote(ctx context.Context) bool {
	s := optsOf(ctx).session
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.wroteAt.IsZero()
}
