package patroni_test

import (
	"context"
	"fmt"

	"github.com/rwpool/rwpool/discovery/patroni"
)

// A Source asks the members' REST APIs in turn for the cluster's
// replicas; rwpool does so itself for a DSN's discover='patroni:…' item
// once the package is imported.
func ExampleOpen() {
	src, err := patroni.Open("http://10.0.0.1:8008,http://10.0.0.2:8008?max_lag_bytes=16777216")
	if err != nil {
		fmt.Println(err)
		return
	}
	ms, err := src.Members(context.Background())
	if err != nil {
		return // no API answered: rwpool keeps the replicas it found last
	}
	for _, m := range ms {
		fmt.Println(m.Name, m.Host, m.Port)
	}
}
