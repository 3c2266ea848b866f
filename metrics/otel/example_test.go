package rwotel_test

import (
	"context"
	"database/sql"
	"log"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	_ "github.com/rwpool/rwpool" // registers the "rwpool" driver
	rwotel "github.com/rwpool/rwpool/metrics/otel"
)

// Report an rwpool database through an OpenTelemetry MeterProvider. Any
// metric.MeterProvider works, e.g. otel.GetMeterProvider() once the
// application has set one up with its exporter.
func ExampleRegister() {
	db, err := sql.Open("rwpool", `driver=postgres;
		primary='host=db1 user=app dbname=shop';
		replica='host=db2 user=app dbname=shop' weight=3`)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	reader := sdkmetric.NewManualReader() // in production: a PeriodicReader with an exporter
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	reg, err := rwotel.Register(db, mp, rwotel.WithAttributes(attribute.String("db", "shop")))
	if err != nil {
		log.Fatal(err) // db was not opened with rwpool
	}
	defer reg.Unregister()
}
