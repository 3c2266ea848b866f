package discovery_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rwpool/rwpool/discovery"
	"github.com/rwpool/rwpool/internal/dnsfake"
)

func TestDNSSources(t *testing.T) {
	srv, err := dnsfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.SetA("replicas.test", "10.0.0.2", "10.0.0.1", "fd00::3")
	srv.SetA("lo.test", "127.0.0.1")
	srv.SetSRV("_pg._tcp.replicas.test", dnsfake.SRV{Target: "lo.test", Port: 5433}, dnsfake.SRV{Target: "lo.test", Port: 5434})
	at := "//" + srv.Addr() + "/"
	for _, tc := range []struct{ source, want string }{
		{"dns:" + at + "replicas.test:5432", "10.0.0.1:5432=10.0.0.1:5432 10.0.0.2:5432=10.0.0.2:5432 [fd00::3]:5432=fd00::3:5432"},
		{"dns:" + at + "replicas.test", "10.0.0.1=10.0.0.1: 10.0.0.2=10.0.0.2: fd00::3=fd00::3:"},
		{"srv:" + at + "_pg._tcp.replicas.test", "127.0.0.1:5433=127.0.0.1:5433 127.0.0.1:5434=127.0.0.1:5434"},
	} {
		src, err := discovery.Open(tc.source)
		if err != nil {
			t.Fatalf("%s: %v", tc.source, err)
		}
		ms, err := src.Members(context.Background())
		var got []string
		for _, m := range ms {
			got = append(got, m.Name+"="+m.Host+":"+m.Port)
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.source, strings.Join(got, " "), err, tc.want)
		}
	}
	// A name that does not exist and a failing server are errors.
	for _, source := range []string{"dns:" + at + "gone.test", "srv:" + at + "_x._tcp.gone.test"} {
		src, _ := discovery.Open(source)
		if ms, err := src.Members(context.Background()); err == nil {
			t.Errorf("%s: %v, no error", source, ms)
		}
	}
	srv.SetFail(true)
	src, _ := discovery.Open("srv:" + at + "_pg._tcp.replicas.test")
	if ms, err := src.Members(context.Background()); err == nil {
		t.Errorf("SERVFAIL: %v, no error", ms)
	}
}

func TestOpenErrors(t *testing.T) {
	for _, source := range []string{"", "dns", "dns:", "dns:a:notaport", "dns://nohostport/x", "srv:a b", "nosuch:x"} {
		if _, err := discovery.Open(source); err == nil {
			t.Errorf("Open(%q): no error", source)
		}
	}
	_, err := discovery.Open("nosuch:secret@x")
	if !errors.Is(err, discovery.ErrUnknownScheme) || strings.Contains(err.Error(), "secret") {
		t.Errorf("unknown scheme: %v", err)
	}
}

func TestRegisterPanics(t *testing.T) {
	for _, scheme := range []string{"dns", "srv", "Bad", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", scheme)
				}
			}()
			discovery.Register(scheme, func(string) (discovery.Source, error) { return nil, nil })
		}()
	}
}
