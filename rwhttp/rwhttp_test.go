package rwhttp_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
	"github.com/rwpool/rwpool/rwhttp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// sim simulates PostgreSQL clusters (its name contains "postgres"): every
// write on a primary moves its WAL position by 0x100, a replica has
// applied what Node.SetReplayed says, and a read answers its node's DSN.
var sim = fakedriver.Register("rwhttp-test-postgres-sim", fakedriver.Options{Replication: true, Record: true})

// freshCluster makes the simulated cluster cl anew: a primary (cl/p) and
// two replicas (cl/r1, cl/r2) that have applied nothing.
func freshCluster(cl string) {
	sim.Fresh(cl + "/p")
	sim.Fresh(cl + "/r1").SetReplayed(0)
	sim.Fresh(cl + "/r2").SetReplayed(0)
}

// simDSN is the DSN of an rwpool over cluster cl, with no health checks
// (each test says what each node has applied) and no causal wait (a read
// no replica can serve goes to the primary at once). Each *sql.DB opened
// with it has its own Connector: another process, as far as sessions go.
func simDSN(cl string) string {
	return fmt.Sprintf("driver=rwhttp-test-postgres-sim;primary=%[1]s/p;replica=%[1]s/r1;replica=%[1]s/r2;check_interval=1h;causal_wait=0", cl)
}

func openSim(t *testing.T, cl string) *sql.DB {
	t.Helper()
	db, err := sql.Open("rwpool", simDSN(cl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// app is a test application over db, behind the middleware: POST /write
// writes; GET /read reads and answers the node that served the read
// ("primary", "replica1", "replica2"); GET /nothing touches no database.
func app(t *testing.T, db *sql.DB, o rwhttp.Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /write", func(w http.ResponseWriter, r *http.Request) {
		if _, err := db.ExecContext(r.Context(), "UPDATE t SET x = 1"); err != nil {
			t.Errorf("write: %v", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /read", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, readNode(t, db, r.Context()))
	})
	mux.HandleFunc("GET /nothing", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "nothing")
	})
	return rwhttp.Middleware(o)(mux)
}

// readNode reads with ctx and returns the node that served the read.
func readNode(t *testing.T, db *sql.DB, ctx context.Context) string {
	t.Helper()
	var r rwpool.Route
	var node string
	if err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT node").Scan(&node); err != nil {
		t.Errorf("read: %v", err)
		return "error"
	}
	return r.Node
}

// serve runs one request through h, with the token tok, if any, in the
// cookie or the header (carrier "cookie" or "header").
func serve(h http.Handler, method, target, carrier, tok string) *http.Response {
	req := httptest.NewRequest(method, target, nil)
	switch {
	case tok == "":
	case carrier == "cookie":
		req.AddCookie(&http.Cookie{Name: rwhttp.DefaultCookie, Value: tok})
	case carrier == "header":
		req.Header.Set(rwhttp.DefaultHeader, tok)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(res *http.Response) string {
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// cookie returns the response's token cookie, or nil.
func cookie(res *http.Response) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == rwhttp.DefaultCookie {
			return c
		}
	}
	return nil
}

// responseToken returns the token set on the response, checking that the
// header and the cookie agree.
func responseToken(t *testing.T, res *http.Response) string {
	t.Helper()
	tok := res.Header.Get(rwhttp.DefaultHeader)
	c := cookie(res)
	switch {
	case tok == "" && c == nil:
		return ""
	case c == nil || c.Value != tok:
		t.Errorf("the response's header has token %q, its cookie %v", tok, c)
	}
	return tok
}

// TestTokenAcrossProcesses: a request that writes through one *sql.DB
// gets a token on its response; a request that brings it back (in the
// cookie, or in the header) through another *sql.DB on the same cluster,
// as another process would, reads from the primary while no replica has
// the write, then from the replica that has it. The same read without the
// token goes to a replica that does not have it: the test can fail.
func TestTokenAcrossProcesses(t *testing.T) {
	for _, carrier := range []string{"cookie", "header"} {
		t.Run(carrier, func(t *testing.T) {
			cl := t.Name()
			freshCluster(cl)
			a1 := app(t, openSim(t, cl), rwhttp.Options{})
			a2 := app(t, openSim(t, cl), rwhttp.Options{})

			res := serve(a1, "POST", "/write", "", "")
			tok := responseToken(t, res)
			if tok == "" || len(tok) > 64 || res.StatusCode != http.StatusOK {
				t.Fatalf("the response of a request that wrote: %s, token %q; want 200 and a token of 1 to 64 characters", res.Status, tok)
			}
			c := cookie(res)
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge != int(rwhttp.DefaultMaxAge/time.Second) || c.Secure || c.Domain != "" {
				t.Errorf("cookie %q, want HttpOnly, SameSite=Lax, Path=/, Max-Age=%d, no Secure, no Domain", res.Header["Set-Cookie"], int(rwhttp.DefaultMaxAge/time.Second))
			}

			if node := body(serve(a2, "GET", "/read", carrier, "")); !strings.HasPrefix(node, "replica") {
				t.Errorf("the control read without the token went to %s, want a replica", node)
			}
			res = serve(a2, "GET", "/read", carrier, tok)
			if node := body(res); node != "primary" {
				t.Errorf("a read resuming the token went to %s before any replica had the write, want the primary", node)
			}
			if got := responseToken(t, res); got != "" {
				t.Errorf("a request that only read got token %q", got)
			}
			sim.Node(cl + "/r2").SetReplayed(0x100)
			for range 20 {
				res := serve(a2, "GET", "/read", carrier, tok)
				if node := body(res); node != "replica2" {
					t.Fatalf("a read resuming the token went to %s, want replica2, the one replica with the write", node)
				}
				if got := responseToken(t, res); got != "" {
					t.Fatalf("a request that only read got token %q", got)
				}
			}

			// The next write's token covers both writes.
			res = serve(a2, "POST", "/write", carrier, tok)
			tok2 := responseToken(t, res)
			if tok2 == "" || tok2 == tok {
				t.Fatalf("a second write's response has token %q (the first: %q)", tok2, tok)
			}
			if node := body(serve(a1, "GET", "/read", carrier, tok2)); node != "primary" {
				t.Errorf("a read resuming the second token went to %s, want the primary (replica2 has only the first write)", node)
			}
		})
	}
}

// TestNoTokenWithoutWrite: a request that does not write gets no token,
// even when its session's token moved because its read saw a replica's
// position (the check below makes sure it did: else the test would pass
// whatever the middleware did).
func TestNoTokenWithoutWrite(t *testing.T) {
	cl := t.Name()
	freshCluster(cl)
	db := openSim(t, cl)
	a := app(t, db, rwhttp.Options{})
	if res := serve(a, "GET", "/nothing", "", ""); len(res.Header) != 1 || responseToken(t, res) != "" {
		t.Errorf("a request that touched no database got header %v", res.Header)
	}
	tok := responseToken(t, serve(a, "POST", "/write", "", ""))
	sim.Node(cl + "/r1").SetReplayed(0x100)
	sim.Node(cl + "/r2").SetReplayed(0x100)
	// Requests resuming the token ask the replicas they read from whether
	// they have it: their positions become known.
	for range 20 {
		serve(a, "GET", "/read", "cookie", tok)
	}

	moved := 0
	h := rwhttp.Middleware(rwhttp.Options{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readNode(t, db, r.Context())
		if rwpool.SessionToken(r.Context()) != "" {
			moved++
		}
	}))
	for range 10 {
		if res := serve(h, "GET", "/", "", ""); responseToken(t, res) != "" || res.Header.Get("Set-Cookie") != "" {
			t.Fatalf("a request that only read got header %v", res.Header)
		}
	}
	if moved == 0 {
		t.Fatal("no read-only request's session had a token: the test checks nothing")
	}
}

// TestInvalidToken: a token that is not one is reported to OnInvalid and
// ignored: the request runs with a fresh session and succeeds. An invalid
// cookie is expired, unless the request wrote and a new token replaces it.
func TestInvalidToken(t *testing.T) {
	cl := t.Name()
	freshCluster(cl)
	var invalid []error
	a := app(t, openSim(t, cl), rwhttp.Options{OnInvalid: func(r *http.Request, err error) {
		if r == nil || r.URL.Path == "" {
			t.Error("OnInvalid got no request")
		}
		invalid = append(invalid, err)
	}})
	check := func(name string, n int) {
		t.Helper()
		if len(invalid) != n {
			t.Fatalf("%s: OnInvalid called %d times, want %d", name, len(invalid), n)
		}
		if n > 0 && !errors.Is(invalid[n-1], rwpool.ErrInvalidToken) {
			t.Errorf("%s: OnInvalid got %v, want an error wrapping ErrInvalidToken", name, invalid[n-1])
		}
	}

	res := serve(a, "GET", "/read", "cookie", "garbage")
	check("invalid cookie, read", 1)
	if node := body(res); res.StatusCode != http.StatusOK || !strings.HasPrefix(node, "replica") {
		t.Errorf("a read with an invalid cookie: %s from %s, want 200 from a replica", res.Status, node)
	}
	if c := cookie(res); c == nil || c.MaxAge >= 0 || c.Path != "/" {
		t.Errorf("the invalid cookie was not expired: Set-Cookie %q", res.Header["Set-Cookie"])
	}

	res = serve(a, "POST", "/write", "cookie", "garbage")
	check("invalid cookie, write", 2)
	tok := responseToken(t, res)
	if res.StatusCode != http.StatusOK || tok == "" || len(res.Cookies()) != 1 {
		t.Errorf("a write with an invalid cookie: %s, token %q, Set-Cookie %q; want 200 and one new token", res.Status, tok, res.Header["Set-Cookie"])
	}
	if _, err := rwpool.WithSessionToken(context.Background(), tok); err != nil {
		t.Errorf("the token replacing an invalid one: %v", err)
	}

	res = serve(a, "GET", "/read", "header", "AAAA")
	check("invalid header", 3)
	if node := body(res); res.StatusCode != http.StatusOK || !strings.HasPrefix(node, "replica") || len(res.Header["Set-Cookie"]) != 0 {
		t.Errorf("a read with an invalid header: %s from %s, Set-Cookie %q; want 200 from a replica, no cookie", res.Status, node, res.Header["Set-Cookie"])
	}

	// Without OnInvalid, the same.
	b := app(t, openSim(t, cl), rwhttp.Options{})
	if res := serve(b, "GET", "/read", "cookie", "garbage"); res.StatusCode != http.StatusOK {
		t.Errorf("an invalid cookie without OnInvalid: %s", res.Status)
	}
}

// TestHeaderBeforeCookie: a request with both is resumed from the
// header; the cookie is not even read.
func TestHeaderBeforeCookie(t *testing.T) {
	cl := t.Name()
	freshCluster(cl)
	var invalid int
	a := app(t, openSim(t, cl), rwhttp.Options{OnInvalid: func(*http.Request, error) { invalid++ }})
	tok := responseToken(t, serve(a, "POST", "/write", "", ""))

	both := func(header, cookie string) string {
		req := httptest.NewRequest("GET", "/read", nil)
		req.Header.Set(rwhttp.DefaultHeader, header)
		req.AddCookie(&http.Cookie{Name: rwhttp.DefaultCookie, Value: cookie})
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		return body(rec.Result())
	}
	if node := both(tok, "garbage"); node != "primary" || invalid != 0 {
		t.Errorf("valid header, invalid cookie: read from %s, %d invalid tokens reported; want the primary, none", node, invalid)
	}
	if node := both("garbage", tok); !strings.HasPrefix(node, "replica") || invalid != 1 {
		t.Errorf("invalid header, valid cookie: read from %s, %d invalid tokens reported; want a replica (a fresh session), one", node, invalid)
	}
}

// TestTokenBeforeBody: the token is in the header the response sends,
// however the handler starts its response: its first Write (the header
// set after it is not sent), WriteHeader, io.Copy, Flush, or nothing at
// all. A write made after the response started is not in it.
func TestTokenBeforeBody(t *testing.T) {
	cl := t.Name()
	freshCluster(cl)
	db := openSim(t, cl)
	write := func(t *testing.T, r *http.Request) {
		if _, err := db.ExecContext(r.Context(), "UPDATE t SET x = 1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name      string
		handler   func(t *testing.T, w http.ResponseWriter, r *http.Request)
		status    int
		wantToken bool
	}{
		{"Write", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			write(t, r)
			io.WriteString(w, "streamed ")
			w.Header().Set("X-Late", "not sent")
			io.WriteString(w, "body")
		}, 200, true},
		{"WriteHeader", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			write(t, r)
			w.WriteHeader(http.StatusCreated)
		}, 201, true},
		{"ReadFrom", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			write(t, r)
			io.Copy(w, io.LimitReader(strings.NewReader("body"), 4)) // not a WriterTo: io.Copy uses w's ReadFrom
		}, 200, true},
		{"Flush", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			write(t, r)
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Error(err)
			}
		}, 200, true},
		{"Flusher", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			write(t, r)
			w.(http.Flusher).Flush()
		}, 200, true},
		{"nothing written", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			write(t, r)
		}, 200, true},
		{"write after the body started", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "started")
			write(t, r)
		}, 200, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h := rwhttp.Middleware(rwhttp.Options{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.handler(t, w, r)
			}))
			h.ServeHTTP(rec, httptest.NewRequest("POST", "/", nil))
			// Result's header is the one of the moment the response
			// started.
			res := rec.Result()
			if got := responseToken(t, res) != ""; got != c.wantToken || res.StatusCode != c.status {
				t.Errorf("%s, token %v; want %d, token %v (header %v)", res.Status, got, c.status, c.wantToken, res.Header)
			}
			if res.Header.Get("X-Late") != "" {
				t.Error("the recorder does not snapshot the header: the test checks nothing")
			}
		})
	}
}

// TestOverHTTP runs the middleware in a real server, with a cookie jar
// client: the browser's case. An informational response (103 Early Hints)
// does not send the token: the final one does, set by the write made
// after it.
func TestOverHTTP(t *testing.T) {
	cl := t.Name()
	freshCluster(cl)
	db := openSim(t, cl)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /write", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		if _, err := db.ExecContext(r.Context(), "UPDATE t SET x = 1"); err != nil {
			t.Error(err)
		}
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /read", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, readNode(t, db, r.Context()))
	})
	srv := httptest.NewServer(rwhttp.Middleware(rwhttp.Options{})(mux))
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	defer client.CloseIdleConnections()

	var early []textproto.MIMEHeader
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		early = append(early, h)
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", srv.URL+"/write", nil)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if len(early) != 1 || early[0].Get(rwhttp.DefaultHeader) != "" || len(early[0]["Set-Cookie"]) != 0 {
		t.Errorf("informational responses %v: want one 103, without the token", early)
	}
	if res.Header.Get(rwhttp.DefaultHeader) == "" || len(jar.Cookies(req.URL)) != 1 {
		t.Fatalf("the final response has header %v; the jar keeps %v", res.Header, jar.Cookies(req.URL))
	}
	res, err = client.Get(srv.URL + "/read")
	if err != nil {
		t.Fatal(err)
	}
	if node := body(res); node != "primary" {
		t.Errorf("the browser's next read went to %s, want the primary", node)
	}
	res.Body.Close()
}

// TestResponseWriter: the handler's ResponseWriter is what the wrapped
// one is, and unwraps for http.ResponseController.
func TestResponseWriter(t *testing.T) {
	mw := rwhttp.Middleware(rwhttp.Options{})
	t.Run("recorder", func(t *testing.T) {
		rec := httptest.NewRecorder()
		mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); !ok || u.Unwrap() != rec {
				t.Error("Unwrap does not return the wrapped ResponseWriter")
			}
			if _, ok := w.(http.Hijacker); ok {
				t.Error("a wrapper of a recorder is an http.Hijacker")
			}
			if _, _, err := http.NewResponseController(w).Hijack(); !errors.Is(err, http.ErrNotSupported) {
				t.Errorf("Hijack: %v, want ErrNotSupported", err)
			}
			if err := w.(http.Pusher).Push("/x", nil); !errors.Is(err, http.ErrNotSupported) {
				t.Errorf("Push: %v, want ErrNotSupported", err)
			}
			if _, ok := w.(io.StringWriter); !ok {
				t.Error("not an io.StringWriter")
			}
			w.(http.Flusher).Flush()
		})).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if !rec.Flushed {
			t.Error("Flush did not flush the recorder")
		}
	})

	t.Run("HTTP/1 server", func(t *testing.T) {
		srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := w.(io.ReaderFrom); !ok {
				t.Error("not an io.ReaderFrom")
			}
			if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
				t.Errorf("SetWriteDeadline through Unwrap: %v", err)
			}
			if r.URL.Path != "/hijack" {
				io.WriteString(w, "plain")
				return
			}
			conn, brw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
			brw.Flush()
		})))
		defer srv.Close()
		client := srv.Client()
		defer client.CloseIdleConnections()
		for path, want := range map[string]string{"/plain": "plain", "/hijack": "hijacked"} {
			res, err := client.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			if got := body(res); got != want {
				t.Errorf("%s answered %q, want %q", path, got, want)
			}
			res.Body.Close()
		}
	})

	t.Run("raw connection", func(t *testing.T) {
		// A hijacked connection's response is the handler's own: nothing
		// is added to it, and nothing is written after the handler
		// returns.
		srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			brw.WriteString("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
			brw.Flush()
		})))
		defer srv.Close()
		res, err := srv.Client().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent || res.Header.Get("Set-Cookie") != "" {
			t.Errorf("%s, header %v", res.Status, res.Header)
		}
		srv.Client().CloseIdleConnections()
	})
}

// TestOptions: names and cookie attributes follow Options; the header or
// the cookie can be left out; invalid options panic at once.
func TestOptions(t *testing.T) {
	cl := t.Name()
	freshCluster(cl)
	db := openSim(t, cl)
	for _, c := range []struct {
		name   string
		o      rwhttp.Options
		header string // the response header with the token
		cookie string // Set-Cookie without the token
	}{
		{"defaults", rwhttp.Options{}, rwhttp.DefaultHeader, "rwpool_session=; Path=/; Max-Age=300; HttpOnly; SameSite=Lax"},
		{"no cookie", rwhttp.Options{NoCookie: true, Header: "x-consistency-token"}, "X-Consistency-Token", ""},
		{"no header", rwhttp.Options{NoHeader: true, Cookie: "rw"}, "", "rw=; Path=/; Max-Age=300; HttpOnly; SameSite=Lax"},
		{"attributes", rwhttp.Options{
			CookiePath: "/app", CookieDomain: "example.com", MaxAge: 90 * time.Second, Secure: true, SameSite: http.SameSiteNoneMode,
		}, rwhttp.DefaultHeader, "rwpool_session=; Path=/app; Domain=example.com; Max-Age=90; HttpOnly; Secure; SameSite=None"},
		{"browser session", rwhttp.Options{MaxAge: -1, SameSite: http.SameSiteStrictMode}, rwhttp.DefaultHeader, "rwpool_session=; Path=/; HttpOnly; SameSite=Strict"},
		{"under a second", rwhttp.Options{MaxAge: time.Millisecond}, rwhttp.DefaultHeader, "rwpool_session=; Path=/; Max-Age=1; HttpOnly; SameSite=Lax"},
	} {
		res := serve(app(t, db, c.o), "POST", "/write", "", "")
		var tok string
		if cs := res.Cookies(); len(cs) == 1 {
			tok = cs[0].Value
		}
		if c.header != "" {
			tok = res.Header.Get(c.header)
			if len(res.Header[c.header]) != 1 || tok == "" {
				t.Errorf("%s: header %v, want the token in %s", c.name, res.Header, c.header)
			}
		}
		var want []string
		if c.cookie != "" {
			name, attrs, _ := strings.Cut(c.cookie, "=")
			want = []string{name + "=" + tok + attrs}
		}
		if got := res.Header["Set-Cookie"]; strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: Set-Cookie %q, want %q", c.name, got, want)
		}
		if c.header == "" && len(res.Header) != 2 { // Set-Cookie, Content-Type
			t.Errorf("%s: header %v, want no token header", c.name, res.Header)
		}
	}

	for name, o := range map[string]rwhttp.Options{
		"header name":              {Header: "X Session"},
		"cookie name":              {Cookie: "a;b"},
		"cookie path":              {CookiePath: "/a;b"},
		"cookie domain":            {CookieDomain: "exa mple.com"},
		"SameSite=None, no Secure": {SameSite: http.SameSiteNoneMode},
	} {
		func() {
			defer func() {
				if e := recover(); e == nil || !strings.HasPrefix(fmt.Sprint(e), "rwhttp: ") {
					t.Errorf("%s: Middleware panicked with %v, want an rwhttp error", name, e)
				}
			}()
			rwhttp.Middleware(o)
		}()
	}
	// A header name the middleware leaves out is not checked.
	rwhttp.Middleware(rwhttp.Options{NoHeader: true, Header: "X Session"})
}

// TestAllocs: the middleware costs a request that touches no database
// (with other cookies) the allocations of WithSession and
// Request.WithContext, which it cannot do without, and its writer's.
func TestAllocs(t *testing.T) {
	var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	})
	hs := []http.Handler{
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handler.ServeHTTP(w, r.WithContext(rwpool.WithSession(r.Context())))
		}),
		rwhttp.Middleware(rwhttp.Options{})(handler),
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Cookie", "app_session=1; theme=dark")
	w := discard{http.Header{}}
	var allocs [2]float64
	for i, h := range hs {
		allocs[i] = testing.AllocsPerRun(100, func() { h.ServeHTTP(w, req) })
	}
	if allocs[1] > allocs[0]+1 {
		t.Errorf("%v allocations a request, want at most %v: %v without the middleware (with WithSession and WithContext), and the writer", allocs[1], allocs[0]+1, allocs[0])
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}
