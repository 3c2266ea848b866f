package patroni

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rwpool/rwpool/discovery"
)

// answer is GET /cluster as Patroni 3.0 writes it, one member per case.
const answer = `{"members": [
 {"name": "pg1", "role": "leader", "state": "running", "api_url": "http://127.0.0.1:8008/patroni", "host": "127.0.0.1", "port": 5432, "timeline": 3},
 {"name": "pg2", "role": "replica", "state": "streaming", "host": "127.0.0.1", "port": 5433, "timeline": 3, "lag": 0},
 {"name": "pg3", "role": "sync_standby", "state": "running", "host": "10.0.0.3", "port": 5432, "timeline": 3, "lag": 4096, "tags": {"nofailover": true}},
 {"name": "pg4", "role": "replica", "state": "streaming", "host": "10.0.0.4", "port": 5432, "lag": 0, "tags": {"noloadbalance": true}},
 {"name": "pg5", "role": "replica", "state": "starting", "host": "10.0.0.5", "port": 5432, "lag": "unknown"},
 {"name": "pg6", "role": "replica", "state": "streaming", "host": "10.0.0.6", "port": 5432, "lag": "unknown"},
 {"name": "pg7", "role": "replica", "state": "running", "host": "10.0.0.7", "port": 5432, "lag": 0, "tags": {"noloadbalance": "false"}}
], "scope": "demo"}`

func serve(t *testing.T, status int, body string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cluster" {
			http.NotFound(w, r)
			return
		}
		if u, p, ok := r.BasicAuth(); status == http.StatusOK && ok && (u != "rw" || p != "s3cret") {
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s
}

func names(ms []discovery.Member) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name+"="+m.Host+":"+m.Port)
	}
	return strings.Join(out, " ")
}

func TestMembers(t *testing.T) {
	s := serve(t, http.StatusOK, answer)
	for _, tc := range []struct{ query, want string }{
		{"", "pg2=127.0.0.1:5433 pg3=10.0.0.3:5432 pg6=10.0.0.6:5432 pg7=10.0.0.7:5432"},
		{"?max_lag_bytes=1024", "pg2=127.0.0.1:5433 pg7=10.0.0.7:5432"},
	} {
		src, err := discovery.Open("patroni:" + s.URL + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := src.Members(context.Background())
		if err != nil || names(ms) != tc.want {
			t.Errorf("%q: members %q, %v; want %q", tc.query, names(ms), err, tc.want)
		}
	}
}

// TestMembersFailover: a URL that fails is passed over for the next; when
// every one fails, the error names each (passwords redacted).
func TestMembersFailover(t *testing.T) {
	good := serve(t, http.StatusOK, answer)
	down := serve(t, http.StatusServiceUnavailable, "")
	garbage := serve(t, http.StatusOK, `<html>not patroni</html>`)
	empty := serve(t, http.StatusOK, `{"scope": "demo"}`)
	auth := strings.Replace(good.URL, "http://", "http://rw:s3cret@", 1)
	src, err := Open(down.URL + "," + auth)
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := src.Members(context.Background()); err != nil || len(ms) != 4 {
		t.Fatalf("down, then good: %q, %v", names(ms), err)
	}
	bad := strings.Replace(down.URL, "http://", "http://rw:s3cret@", 1)
	src, _ = Open(bad + "," + garbage.URL + "," + empty.URL + ",http://127.0.0.1:1")
	_, err = src.Members(context.Background())
	if err == nil {
		t.Fatal("every URL failed, and no error")
	}
	for _, want := range []string{"503", "not Patroni's answer", "no members list", "127.0.0.1:1", "rw:xxxxx@"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows the password: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	for _, target := range []string{"", "10.0.0.1:8008", "ftp://h", "http://h?max_lag_bytes=x", "http://h?max_lag_bytes=-1"} {
		if _, err := Open(target); err == nil {
			t.Errorf("Open(%q): no error", target)
		}
	}
}
