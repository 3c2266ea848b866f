package rwprom_test

import (
	"database/sql"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	_ "github.com/rwpool/rwpool" // registers the "rwpool" driver
	rwprom "github.com/rwpool/rwpool/metrics/prometheus"
)

// Register the collector of an rwpool database and serve it, with the rest
// of the default registry, on /metrics. The real driver ("postgres" here,
// e.g. github.com/lib/pq) must be imported as in any database/sql program.
func ExampleNewCollector() {
	db, err := sql.Open("rwpool", `driver=postgres;
		primary='host=db1 user=app dbname=shop';
		replica='host=db2 user=app dbname=shop' weight=3`)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	c, err := rwprom.NewCollector(db, rwprom.WithConstLabels(prometheus.Labels{"db": "shop"}))
	if err != nil {
		log.Fatal(err) // db was not opened with rwpool
	}
	prometheus.MustRegister(c)

	http.Handle("/metrics", promhttp.Handler())
	log.Fatal(http.ListenAndServe(":9090", nil))
}
