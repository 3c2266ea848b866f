// Command scalechart draws BENCHMARKS.md's scale charts from rounds of the
// root package's BenchmarkReadGoroutines and BenchmarkReadReplicas (go
// test -bench output, one file per round): the median of the rounds for
// each sub-benchmark, with the rounds' spread in the bar's label.
//
//	go run ./internal/scalechart -out ../../benchmarks round*.txt
//
// It is a tool of the project's own, not of rwpool's users: it lives
// under internal/ so that nothing imports it.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rwpool/rwpool/cmd/rwpool/internal/charts"
)

// line matches one result: the name without its -GOMAXPROCS suffix, then
// the metrics.
var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// results holds every round's value of each (benchmark, unit).
type results map[string]map[string][]float64

func (r results) add(name, unit string, v float64) {
	if r[name] == nil {
		r[name] = map[string][]float64{}
	}
	r[name][unit] = append(r[name][unit], v)
}

// median returns the median of the rounds of name's unit, and their
// smallest and largest; NaN if there is none.
func (r results) median(name, unit string) (med, lo, hi float64) {
	vs := slices.Clone(r[name][unit])
	if len(vs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	slices.Sort(vs)
	n := len(vs)
	med = vs[n/2]
	if n%2 == 0 {
		med = (vs[n/2-1] + vs[n/2]) / 2
	}
	return med, vs[0], vs[n-1]
}

func parse(files []string) (results, error) {
	r := results{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			m := line.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			fs := strings.Fields(m[2])
			for i := 0; i+1 < len(fs); i += 2 {
				v, err := strconv.ParseFloat(fs[i], 64)
				if err == nil {
					r.add(m[1], fs[i+1], v)
				}
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func main() {
	out := flag.String("out", ".", "the folder the SVG files are written to")
	flag.Parse()
	r, err := parse(flag.Args())
	if err != nil {
		log.Fatal(err)
	}
	goroutines := []string{"1", "8", "64", "512", "1024"}
	replicas := []string{"1", "2", "8", "32", "64"}
	rounds := len(r["BenchmarkReadReplicas/replicas=1"]["ns/op"])

	series := func(name func(string) string, groups []string, unit string, scale float64) []float64 {
		vs := make([]float64, len(groups))
		for i, g := range groups {
			m, _, _ := r.median(name(g), unit)
			vs[i] = m * scale
		}
		return vs
	}
	var cpu, p99 []charts.BarSeries
	for _, mode := range []string{"bare", "rwpool"} {
		name := func(g string) string { return "BenchmarkReadGoroutines/" + mode + "/goroutines=" + g }
		// Throughput per core: reads per CPU-second.
		per := series(name, goroutines, "cpu-ns/op", 1)
		for i, v := range per {
			per[i] = 1e9 / v
		}
		cpu = append(cpu, charts.BarSeries{Name: mode, Values: per})
		p99 = append(p99, charts.BarSeries{Name: mode, Values: series(name, goroutines, "p99-ns", 1e-6)})
	}
	of := fmt.Sprintf(" (no-op driver, 64 connections; median of %d rounds)", rounds)
	write(*out, "scale-goroutines-throughput.svg", charts.Bars{
		Title: "Reads per CPU-second by goroutines sharing one *sql.DB" + of, XLabel: "goroutines", YLabel: "reads per CPU-second",
		Groups: goroutines, Series: cpu, Format: func(v float64) string { return fmt.Sprintf("%.0fk", v/1000) },
	})
	write(*out, "scale-goroutines-p99.svg", charts.Bars{
		Title: "p99 of one read by goroutines sharing one *sql.DB" + of, XLabel: "goroutines", YLabel: "p99 (ms)",
		Groups: goroutines, Series: p99, Format: func(v float64) string { return fmt.Sprintf("%.2g", v) },
	})
	rep := func(g string) string { return "BenchmarkReadReplicas/replicas=" + g }
	write(*out, "scale-replicas.svg", charts.Bars{
		Title:  fmt.Sprintf("A read's time and a Connector's memory by replicas (no-op driver; median of %d rounds)", rounds),
		XLabel: "replicas", YLabel: "ns per read; KiB per Connector", Groups: replicas,
		Series: []charts.BarSeries{
			{Name: "ns per read", Values: series(rep, replicas, "ns/op", 1)},
			{Name: "KiB per Connector", Values: series(rep, replicas, "connector-B", 1.0/1024)},
		},
		Format: func(v float64) string { return fmt.Sprintf("%.0f", v) },
	})
	// The table BENCHMARKS.md shows: median [min, max] of the rounds.
	for _, mode := range []string{"bare", "rwpool"} {
		for _, g := range goroutines {
			n := "BenchmarkReadGoroutines/" + mode + "/goroutines=" + g
			fmt.Printf("| %s | %s |", mode, g)
			for _, u := range []string{"ns/op", "cpu-ns/op", "p99-ns", "allocs/op", "B/op"} {
				m, lo, hi := r.median(n, u)
				fmt.Printf(" %s [%s, %s] |", short(m, u), short(lo, u), short(hi, u))
			}
			fmt.Println()
		}
	}
	for _, g := range replicas {
		n := rep(g)
		fmt.Printf("| %s |", g)
		for _, u := range []string{"ns/op", "cpu-ns/op", "allocs/op", "connector-B"} {
			m, lo, hi := r.median(n, u)
			fmt.Printf(" %s [%s, %s] |", short(m, u), short(lo, u), short(hi, u))
		}
		fmt.Println()
	}
}

// short formats v of unit for the table.
func short(v float64, unit string) string {
	switch unit {
	case "p99-ns":
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + " ms"
	case "connector-B":
		return fmt.Sprintf("%.0f KiB", v/1024)
	case "allocs/op", "B/op":
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func write(dir, name string, c charts.Bars) {
	if err := os.WriteFile(filepath.Join(dir, name), c.SVG(), 0o644); err != nil {
		log.Fatal(err)
	}
}
