package discovery_test

import (
	"context"
	"fmt"

	"github.com/rwpool/rwpool/discovery"
)

// A source of replicas for a DSN's discover item. rwpool opens and asks
// it itself; a program asks it directly to see what rwpool would find.
func ExampleOpen() {
	src, err := discovery.Open("srv:_postgresql._tcp.shop-replicas.default.svc.cluster.local")
	if err != nil {
		fmt.Println(err)
		return
	}
	ms, err := src.Members(context.Background())
	if err != nil {
		return // rwpool would keep the replicas it found last
	}
	for _, m := range ms {
		fmt.Println(m.Name, m.Host, m.Port)
	}
}

// A package registers a scheme from its init function, as
// github.com/rwpool/rwpool/discovery/patroni registers "patroni".
func ExampleRegister() {
	discovery.Register("static", func(target string) (discovery.Source, error) {
		return static{{Name: target, Host: target}}, nil
	})
	src, _ := discovery.Open("static:10.0.0.9")
	ms, _ := src.Members(context.Background())
	fmt.Println(ms[0].Host)
	// Output: 10.0.0.9
}

type static []discovery.Member

func (s static) Members(context.Context) ([]discovery.Member, error) { return s, nil }
