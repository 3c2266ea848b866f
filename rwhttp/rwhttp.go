// Package rwhttp carries rwpool's causal sessions across HTTP requests.
//
// A request that writes through rwpool gets, on its response, a session
// token (rwpool.SessionToken) in a cookie and a response header. The
// client's next requests send it back, and their reads see that write
// (rwpool.WithSessionToken), on whichever server instance, process or
// *sql.DB serves them:
//
//	mux := http.NewServeMux()
//	mux.HandleFunc("POST /orders", createOrder) // db.ExecContext(r.Context(), …)
//	mux.HandleFunc("GET /orders/{id}", getOrder) // sees the order just created
//	http.ListenAndServe(":8080", rwhttp.Middleware(rwhttp.Options{})(mux))
//
// Handlers must run their statements with the request's context
// (r.Context(), or a context derived from it): that is where the session
// is.
//
// # What the middleware does
//
// Every request gets a causal session (rwpool.WithSession), so that its
// writes are tracked and its own later reads see them; a request that
// neither writes nor brings a token pays only a few allocations for it
// (its reads stay on one replica, as a session's do). If the request
// carries a token, in the header or else in the cookie, the session
// resumes it.
//
// Just before the response's header goes out (its first Write,
// WriteHeader, Flush or ReadFrom, or when the handler returns having
// written nothing), if the request wrote (rwpool.SessionWrote) and its
// session's token differs from the one it came with, the token is set on
// the response: in the header and in the cookie. It is set then because
// nothing can be added to a header once it is sent; a write a handler
// makes after its response started is not in the token.
//
// # Why it is built this way
//
//   - A token is handed back only after a write. A session's token also
//     moves with what its reads saw, so that a process it is handed to does
//     not read older data; handed back after reads, it would change on
//     nearly every response (Set-Cookie everywhere, responses no cache
//     keeps), and make every later request of the client a causal one,
//     whose reads must find a replica known to be recent enough.
//   - A token that is not one (rwpool.ErrInvalidToken) is ignored: the
//     request goes on with a fresh session and never fails because of it,
//     since a token is a consistency hint, not a credential. An invalid
//     cookie is expired on the response, so that the client stops sending
//     it. Options.OnInvalid reports such tokens.
//   - The header is read before the cookie: a client that sends the
//     header manages its token itself, while a cookie may be a browser's
//     leftover.
//   - The cookie is HttpOnly (scripts that need the token read the
//     header), SameSite=Lax, Path=/ and lives DefaultMaxAge: a token is
//     only worth keeping while a replica may still lack the writes it
//     names, and a short life bounds what a stale one costs (a token of a
//     cluster since rebuilt fails the reads of the requests that resume
//     it, see rwpool.WithSessionToken).
//   - Tokens are not signed: they name a position, and grant nothing. A
//     client that forges one makes its own reads wait up to causal_wait
//     for a replica with that position, then go to the primary.
//
// The ResponseWriter a handler gets is an http.Flusher, an io.ReaderFrom
// (io.Copy keeps the wrapped writer's sendfile), an io.StringWriter and an
// http.Pusher, each passing the call on to the wrapped writer (or, where
// it cannot, doing nothing for Flush and returning http.ErrNotSupported
// for Push); it is an http.Hijacker only if the wrapped writer is one
// (HTTP/1, not HTTP/2), and a hijacked connection gets no token. It
// unwraps (Unwrap) for http.ResponseController.
package rwhttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/rwpool/rwpool"
)

// The defaults of Options.
const (
	// DefaultHeader is the request and response header that carries the
	// token.
	DefaultHeader = "X-Rwpool-Session"
	// DefaultCookie is the name of the cookie that carries the token.
	DefaultCookie = "rwpool_session"
	// DefaultMaxAge is how long a browser keeps the cookie. Healthy
	// replicas apply a write within milliseconds, and a replica minutes
	// behind should serve no reads at all (max_lag): by then the token
	// has done its work.
	DefaultMaxAge = 5 * time.Minute
)

// Options configure Middleware. The zero value uses both the header and
// the cookie, with the defaults above.
type Options struct {
	// Header is the request and response header that carries the
	// token; "": DefaultHeader. Browsers' scripts reading it from a
	// cross-origin response need it listed in
	// Access-Control-Expose-Headers.
	Header string
	// NoHeader makes the middleware neither read nor set the header.
	NoHeader bool

	// Cookie is the name of the cookie that carries the token; "":
	// DefaultCookie.
	Cookie string
	// NoCookie makes the middleware neither read nor set the cookie.
	NoCookie bool
	// CookiePath is the cookie's Path; "": "/", every path of the site
	// reads the database.
	CookiePath string
	// CookieDomain is the cookie's Domain; "": the host that set it only.
	CookieDomain string
	// MaxAge is how long a browser keeps the cookie (whole seconds, at
	// least one); 0: DefaultMaxAge; negative: until the browser closes.
	MaxAge time.Duration
	// Secure restricts the cookie to HTTPS. Set it when the site is
	// served over HTTPS.
	Secure bool
	// SameSite is the cookie's SameSite attribute; 0:
	// http.SameSiteLaxMode. http.SameSiteNoneMode requires Secure.
	SameSite http.SameSite

	// OnInvalid, if not nil, is called with the request and the error
	// (wrapping rwpool.ErrInvalidToken) for a token that is not one,
	// before the request goes on with a fresh session: to log or count
	// them. It cannot stop the request; a middleware in front of this one
	// can, if the application wants invalid tokens rejected.
	OnInvalid func(r *http.Request, err error)
}

// Middleware returns net/http middleware that gives each request a causal
// session, resumed from the token the request carries, and sets the
// session's new token on the response of a request that wrote (see the
// package documentation).
//
// It panics if o is invalid (a header or cookie name that is not a token,
// a cookie path or domain a browser would refuse, SameSite=None without
// Secure): a mistake there would otherwise drop every token silently.
func Middleware(o Options) func(http.Handler) http.Handler {
	m, err := newMiddleware(o)
	if err != nil {
		panic(err)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m.serve(next, w, r)
		})
	}
}

// middleware is Options, checked and made ready for each request.
type middleware struct {
	header    string // canonical; "": none
	cookie    string // "": none
	setCookie string // "name=" of the Set-Cookie value
	attrs     string // "; Path=/; …": the rest of it
	expired   string // the Set-Cookie value that expires the cookie
	onInvalid func(*http.Request, error)
}

func newMiddleware(o Options) (*middleware, error) {
	m := &middleware{onInvalid: o.OnInvalid}
	if !o.NoHeader {
		m.header = o.Header
		if m.header == "" {
			m.header = DefaultHeader
		}
		if !isToken(m.header) {
			return nil, fmt.Errorf("rwhttp: Options.Header %q is not a header name", m.header)
		}
		m.header = http.CanonicalHeaderKey(m.header)
	}
	if o.NoCookie {
		return m, nil
	}
	c := http.Cookie{
		Name:     o.Cookie,
		Value:    "x",
		Path:     o.CookiePath,
		Domain:   o.CookieDomain,
		Secure:   o.Secure,
		HttpOnly: true,
		SameSite: o.SameSite,
	}
	if c.Name == "" {
		c.Name = DefaultCookie
	}
	if c.Path == "" {
		c.Path = "/"
	}
	if c.SameSite == 0 {
		c.SameSite = http.SameSiteLaxMode
	}
	if c.SameSite == http.SameSiteNoneMode && !c.Secure {
		return nil, errors.New("rwhttp: SameSite=None requires Options.Secure (browsers refuse the cookie)")
	}
	if err := c.Valid(); err != nil {
		return nil, fmt.Errorf("rwhttp: invalid cookie options: %w", err)
	}
	switch {
	case o.MaxAge == 0:
		c.MaxAge = int(DefaultMaxAge / time.Second)
	case o.MaxAge > 0:
		c.MaxAge = max(int(o.MaxAge/time.Second), 1)
	}
	m.cookie = c.Name
	m.setCookie = c.Name + "="
	m.attrs = strings.TrimPrefix(c.String(), m.setCookie+c.Value)
	c.Value, c.MaxAge = "", -1
	m.expired = c.String()
	return m, nil
}

// isToken reports whether s is an RFC 9110 token, as header names are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func (m *middleware) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	ctx := rwpool.WithSession(r.Context())
	in, fromCookie := m.token(r)
	expire := false
	if in != "" {
		// ctx carries a session: resuming the token into it returns it.
		if _, err := rwpool.WithSessionToken(ctx, in); err != nil {
			if m.onInvalid != nil {
				m.onInvalid(r, err)
			}
			in, expire = "", fromCookie
		}
	}
	tw := &tokenWriter{rw: w, ctx: ctx, m: m, in: in, expire: expire}
	var out http.ResponseWriter = tw
	if _, ok := w.(http.Hijacker); ok {
		out = hijackWriter{tw} // one pointer: no allocation
	}
	next.ServeHTTP(out, r.WithContext(ctx))
	tw.commit()
}

// token returns the token r carries, the header's if it has one, and
// whether it came from the cookie.
func (m *middleware) token(r *http.Request) (string, bool) {
	if m.header != "" {
		if v := r.Header[m.header]; len(v) > 0 && v[0] != "" {
			return v[0], false
		}
	}
	if m.cookie != "" && m.mayHaveCookie(r) {
		if c, err := r.Cookie(m.cookie); err == nil && c.Value != "" {
			return c.Value, true
		}
	}
	return "", false
}

// mayHaveCookie reports whether r's Cookie header names the cookie, at
// least as a substring: a request with only other cookies, as most have,
// is not parsed.
func (m *middleware) mayHaveCookie(r *http.Request) bool {
	for _, line := range r.Header["Cookie"] {
		if strings.Contains(line, m.cookie) {
			return true
		}
	}
	return false
}

// tokenWriter sets the session's token on the response just before its
// header goes out.
type tokenWriter struct {
	rw     http.ResponseWriter
	ctx    context.Context // the request's, with the session
	m      *middleware
	in     string // the valid token the request came with, if any
	expire bool   // the request's cookie was invalid: expire it
	done   bool   // the header went out, or the connection was hijacked
}

// commit sets the token, if it is new and the request wrote, or expires
// an invalid cookie, once. The handler's ResponseWriter is not safe for
// concurrent use, and neither is this.
func (w *tokenWriter) commit() {
	if w.done {
		return
	}
	w.done = true
	var tok string
	if rwpool.SessionWrote(w.ctx) {
		tok = rwpool.SessionToken(w.ctx)
	}
	h := w.rw.Header()
	switch {
	case tok != "" && tok != w.in:
		if w.m.header != "" {
			h[w.m.header] = []string{tok}
		}
		if w.m.cookie != "" {
			h.Add("Set-Cookie", w.m.setCookie+tok+w.m.attrs)
		}
	case w.expire:
		h.Add("Set-Cookie", w.m.expired)
	}
}

// Header implements http.ResponseWriter.
func (w *tokenWriter) Header() http.Header { return w.rw.Header() }

// WriteHeader implements http.ResponseWriter. An informational status
// (1xx but 101) is sent as it is: the final header is still to come.
func (w *tokenWriter) WriteHeader(code int) {
	if code < 100 || code > 199 || code == http.StatusSwitchingProtocols {
		w.commit()
	}
	w.rw.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *tokenWriter) Write(b []byte) (int, error) {
	w.commit()
	return w.rw.Write(b)
}

// WriteString implements io.StringWriter, so that io.WriteString does not
// copy s.
func (w *tokenWriter) WriteString(s string) (int, error) {
	w.commit()
	return io.WriteString(w.rw, s)
}

// ReadFrom implements io.ReaderFrom, so that io.Copy (http.ServeContent)
// keeps the wrapped writer's, which sends files with sendfile.
func (w *tokenWriter) ReadFrom(src io.Reader) (int64, error) {
	w.commit()
	if rf, ok := w.rw.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(w.rw, src)
}

// Flush implements http.Flusher. It does nothing if the wrapped writer
// cannot flush (see FlushError).
func (w *tokenWriter) Flush() { _ = w.FlushError() }

// FlushError flushes the wrapped writer, as http.ResponseController.Flush
// does: it returns an error wrapping http.ErrNotSupported if it cannot.
// It is here, rather than reached through Unwrap, because a flush sends
// the header.
func (w *tokenWriter) FlushError() error {
	w.commit()
	return http.NewResponseController(w.rw).Flush()
}

// Push implements http.Pusher: it pushes with the wrapped writer, or
// returns http.ErrNotSupported, as Pusher says, when that one cannot.
func (w *tokenWriter) Push(target string, opts *http.PushOptions) error {
	if p, ok := w.rw.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController
// (its deadlines, EnableFullDuplex, Hijack).
func (w *tokenWriter) Unwrap() http.ResponseWriter { return w.rw }

// hijackWriter is the tokenWriter of a ResponseWriter that is an
// http.Hijacker, and is one too: code that asserts http.Hijacker to learn
// whether it can take the connection over (HTTP/1, not HTTP/2) learns the
// truth.
type hijackWriter struct{ *tokenWriter }

// Hijack implements http.Hijacker. A hijacked connection's response is
// the handler's to write: it gets no token.
func (w hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := w.rw.(http.Hijacker).Hijack()
	if err == nil {
		w.done = true
	}
	return c, brw, err
}
