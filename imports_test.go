package rwpool_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoHTTPInDriver: importing the driver must not link net/http, nor
// package expvar, which registers GET /debug/vars on
// http.DefaultServeMux in every program that imports it. The expvar export
// lives in metrics/expvar for that reason. go list sees the whole import
// graph of the package, which no test binary can (tests link more).
func TestNoHTTPInDriver(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/rwpool/rwpool").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || deps[len(deps)-1] != "github.com/rwpool/rwpool" {
		t.Fatalf("unexpected go list output:\n%s", out)
	}
	for _, p := range deps {
		switch p {
		case "net/http", "expvar", "net/http/pprof":
			t.Errorf("github.com/rwpool/rwpool links %s", p)
		}
	}
}
