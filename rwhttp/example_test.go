package rwhttp_test

import (
	"database/sql"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/rwhttp"
)

// dsn stands for an application's rwpool DSN, such as
// "driver=pgx;primary='postgres://app@db1/shop';replica='postgres://app@db2/shop'":
// the examples run on a simulated PostgreSQL cluster whose replicas never
// catch up.
var dsn = func() string {
	freshCluster("examples")
	return simDSN("examples")
}()

// shop is the application of the examples: POST /orders writes, GET
// /orders reads and says which kind of node served the read.
func shop(db *sql.DB) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		if _, err := db.ExecContext(r.Context(), "INSERT INTO orders (item) VALUES ($1)", "tea"); err != nil {
			http.Error(w, "cannot order", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) {
		var route rwpool.Route
		var node string
		if err := db.QueryRowContext(rwpool.WithRoute(r.Context(), &route), "SELECT item FROM orders").Scan(&node); err != nil {
			http.Error(w, "cannot read orders", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, route.Role)
	})
	return mux
}

// A browser creates an order through one instance of the application and
// lists its orders through another one, with its own *sql.DB: the cookie
// the first response set takes the list to a node that has the order.
func Example() {
	db1, err := sql.Open("rwpool", dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer db1.Close()
	db2, err := sql.Open("rwpool", dsn) // another process
	if err != nil {
		log.Fatal(err)
	}
	defer db2.Close()
	instance1 := rwhttp.Middleware(rwhttp.Options{})(shop(db1))
	instance2 := rwhttp.Middleware(rwhttp.Options{})(shop(db2))

	rec := httptest.NewRecorder()
	instance1.ServeHTTP(rec, httptest.NewRequest("POST", "/orders", nil))
	cookies := rec.Result().Cookies()
	fmt.Println(rec.Code, "with a cookie:", len(cookies) == 1)

	list := httptest.NewRequest("GET", "/orders", nil)
	list.AddCookie(cookies[0])
	rec = httptest.NewRecorder()
	instance2.ServeHTTP(rec, list)
	fmt.Println("read from the", rec.Body, "(no replica has the order)")

	rec = httptest.NewRecorder()
	instance2.ServeHTTP(rec, httptest.NewRequest("GET", "/orders", nil))
	fmt.Println("without the cookie: read from a", rec.Body)
	// Output:
	// 201 with a cookie: true
	// read from the primary (no replica has the order)
	// without the cookie: read from a replica
}

// The middleware wraps the application's whole mux: every request gets a
// session, and the response of one that wrote carries its token.
func ExampleMiddleware() {
	db, err := sql.Open("rwpool", dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	handler := rwhttp.Middleware(rwhttp.Options{})(shop(db))
	// http.ListenAndServe(":8080", handler)

	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("POST", "/orders", nil))
	tok := rec.Header().Get(rwhttp.DefaultHeader)
	fmt.Println(rwhttp.DefaultHeader+":", tok != "")
	fmt.Println("Set-Cookie:", strings.Replace(rec.Header().Get("Set-Cookie"), tok, "…", 1))

	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/orders", nil))
	fmt.Println("after a read:", rec.Header().Get("Set-Cookie") == "")
	// Output:
	// X-Rwpool-Session: true
	// Set-Cookie: rwpool_session=…; Path=/; Max-Age=300; HttpOnly; SameSite=Lax
	// after a read: true
}

// An API whose clients keep the token themselves, in a header of their
// own, with no cookie; tokens that are not ones are logged.
func ExampleOptions() {
	db, err := sql.Open("rwpool", dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	handler := rwhttp.Middleware(rwhttp.Options{
		Header:   "X-Consistency-Token",
		NoCookie: true,
		OnInvalid: func(r *http.Request, err error) {
			fmt.Println(r.Method, r.URL.Path, "invalid token:", err) // log.Printf, in an application
		},
	})(shop(db))

	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("POST", "/orders", nil))
	tok := rec.Header().Get("X-Consistency-Token")
	fmt.Println("token:", tok != "", "cookies:", len(rec.Result().Cookies()))

	list := httptest.NewRequest("GET", "/orders", nil)
	list.Header.Set("X-Consistency-Token", tok)
	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, list)
	fmt.Println("read from the", rec.Body)

	list.Header.Set("X-Consistency-Token", "not-a-token")
	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, list)
	fmt.Println(rec.Code, "read from a", rec.Body)
	// Output:
	// token: true cookies: 0
	// read from the primary
	// GET /orders invalid token: rwpool: invalid session token (11 characters): malformed
	// 200 read from a replica
}
