package rwexpvar_test

import (
	"database/sql"
	"log"
	"net/http"

	_ "github.com/rwpool/rwpool" // registers the "rwpool" driver
	rwexpvar "github.com/rwpool/rwpool/metrics/expvar"
)

// Publish the statistics of an rwpool database as the expvar variable
// "rwpool" and serve them, with the rest of /debug/vars, on a loopback
// address. The real driver ("postgres" here, e.g. github.com/lib/pq) must
// be imported as in any database/sql program.
func ExamplePublish() {
	db, err := sql.Open("rwpool", `driver=postgres;
		primary='host=db1 user=app dbname=shop';
		replica='host=db2 user=app dbname=shop' weight=3`)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := rwexpvar.Publish("rwpool", db); err != nil {
		log.Fatal(err) // db was not opened with rwpool, or the name is taken
	}

	// Importing package expvar (which rwexpvar does) registers
	// GET /debug/vars on http.DefaultServeMux: keep it off public addresses.
	log.Fatal(http.ListenAndServe("127.0.0.1:6060", nil))
}
