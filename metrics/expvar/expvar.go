// Package rwexpvar publishes the statistics of an rwpool database as an
// expvar variable, in JSON, for GET /debug/vars.
//
//	db, err := sql.Open("rwpool", dsn)
//	...
//	if err := rwexpvar.Publish("rwpool", db); err != nil { ... }
//
// Its import path is github.com/rwpool/rwpool/metrics/expvar; the package is
// named rwexpvar, like rwprom and rwotel beside it, so that it does not
// shadow the standard library's expvar in the programs that use both.
//
// It is a package of its own, rather than a function of package rwpool,
// because the standard library's expvar imports net/http and registers its
// handler for GET /debug/vars on http.DefaultServeMux in every program that
// imports it: importing the rwpool driver must do neither. The same holds
// for this package: a program that imports it has /debug/vars (with the
// "cmdline" and "memstats" variables) on http.DefaultServeMux, so do not
// serve http.DefaultServeMux on a public address.
//
// The package uses only rwpool's public API (rwpool.Stats) and, unlike the
// Prometheus and OpenTelemetry exporters, needs nothing outside the
// standard library, so it lives in the rwpool module itself.
package rwexpvar

import (
	"database/sql"
	"errors"
	"expvar"
	"fmt"
	"sync"
	"time"

	"github.com/rwpool/rwpool"
)

// Publish publishes the statistics of db, which must have been opened with
// rwpool (sql.Open("rwpool", …) or sql.OpenDB with an *rwpool.Connector),
// as the expvar variable name. Every read of the variable (for instance a
// GET of /debug/vars) takes a fresh rwpool.Snapshot, which needs no
// database connection, and renders it as JSON:
//
//	{"nodes": [{"name": "primary", "role": "primary", "weight": 1,
//	  "available": true, "state": "available", "since": "2025-…",
//	  "trips": 0, "probe_latency_seconds": 0.0004, "max_open": 100,
//	  "open": 3, "idle": 2, "in_use": 1, "waiting": 0, "served": 1234,
//	  "errors": 0, "wait_count": 0, "wait_seconds": 0, "replays": 0,
//	  "fallbacks": 0, "causal_reads": 0, "causal_waits": 0,
//	  "causal_wait_seconds": 0, "causal_fallbacks": 0, "too_stale": 0,
//	  "hedges": 0, "hedge_wins": 0, "hedges_refused": 0,
//	  "lag_known": false, "position": "0/3000148", "reports": "writable",
//	  "role_mismatch": false},
//	 {"name": "replica1", …, "lag_seconds": 0.25, "lag_known": true, …}]}
//
// Once statements ran on a node, "latency" summarises each of its
// statement time histograms (rwpool.NodeStats.Latency): kind, outcome,
// count, sum_seconds, and p50_seconds and p99_seconds read off the buckets
// (within a factor of √2 above the true quantile).
//
// Durations are in seconds. "unavailable_since" appears while a node is
// unavailable (it is then its "since") and "last_error" once it has
// tripped; the latter is the node's LastError, in which node DSNs are
// redacted, as everywhere in rwpool. "lag_seconds" appears only while a lag
// is known ("lag_known"; never for the primary); "status_error" only while
// the last status query failed. "position" and "reports" are "" until the
// health checker has read a status (and always for drivers without
// replication positions). Nodes appear by name, primary first; their DSNs
// are never shown.
//
// Publish returns an error wrapping rwpool.ErrNotRWPool when db was not
// opened with rwpool, and an error (instead of expvar.Publish's panic) when
// name is empty or already published.
//
// expvar is process-global and offers no way to unpublish: the variable,
// and with it a reference to db, lives as long as the process. Publish
// each database once, under a name of its own. A database closed later
// keeps answering, with the state it had when closed (all connections
// closed, counters as they were).
func Publish(name string, db *sql.DB) error {
	if name == "" {
		return errors.New("rwexpvar: empty name")
	}
	if db == nil {
		return fmt.Errorf("rwexpvar: %q: nil *sql.DB", name)
	}
	if _, err := rwpool.Stats(db); err != nil {
		return fmt.Errorf("rwexpvar: %q: %w", name, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if expvar.Get(name) != nil {
		return fmt.Errorf("rwexpvar: %q is already published", name)
	}
	return publish(name, expvar.Func(func() any { return render(db) }))
}

// mu serialises Publish's check-then-publish.
var mu sync.Mutex

// publish calls expvar.Publish, turning its panic on a duplicate name
// (which only another package publishing the same name concurrently can
// cause here) into an error.
func publish(name string, v expvar.Var) (err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("rwexpvar: %q is already published", name)
		}
	}()
	expvar.Publish(name, v)
	return nil
}

// snapshot is the JSON form of an rwpool.Snapshot.
type snapshot struct {
	Nodes     []node   `json:"nodes"`
	Discovery []source `json:"discovery,omitempty"`
}

// source is the JSON form of an rwpool.DiscoveryStats.
type source struct {
	Name      string            `json:"name"`
	Source    string            `json:"source"` // passwords redacted
	Members   int64             `json:"members"`
	Rounds    int64             `json:"rounds"`
	Failures  int64             `json:"failures"`
	LastError string            `json:"last_error,omitempty"`
	LastOK    time.Time         `json:"last_ok"`
	Pending   map[string]string `json:"pending,omitempty"`
}

// node is the JSON form of an rwpool.NodeStats. Every integer is an int64,
// whatever the width of the field it comes from.
type node struct {
	Name                string    `json:"name"`
	Role                string    `json:"role"`
	RoleSince           time.Time `json:"role_since,omitzero"` // when a promotion gave it Role; absent while it has the DSN's
	Weight              int64     `json:"weight"`
	Available           bool      `json:"available"`
	State               string    `json:"state"`
	Since               time.Time `json:"since"`
	UnavailableSince    time.Time `json:"unavailable_since,omitzero"`
	Trips               int64     `json:"trips"`
	LastError           string    `json:"last_error,omitempty"`
	ProbeLatencySeconds float64   `json:"probe_latency_seconds"`
	MaxOpen             int64     `json:"max_open"`
	Open                int64     `json:"open"`
	Idle                int64     `json:"idle"`
	InUse               int64     `json:"in_use"`
	Waiting             int64     `json:"waiting"`
	Served              int64     `json:"served"`
	Errors              int64     `json:"errors"`
	WaitCount           int64     `json:"wait_count"`
	WaitSeconds         float64   `json:"wait_seconds"`
	Replays             int64     `json:"replays"`
	Fallbacks           int64     `json:"fallbacks"`
	CausalReads         int64     `json:"causal_reads"`
	CausalWaits         int64     `json:"causal_waits"`
	CausalWaitSeconds   float64   `json:"causal_wait_seconds"`
	CausalFallbacks     int64     `json:"causal_fallbacks"`
	TooStale            int64     `json:"too_stale"`
	Hedges              int64     `json:"hedges"`
	HedgeWins           int64     `json:"hedge_wins"`
	HedgesRefused       int64     `json:"hedges_refused"`
	Dials               int64     `json:"dials"`
	ClosedSession       int64     `json:"closed_session"`
	ClosedBroken        int64     `json:"closed_broken"`
	ClosedExpired       int64     `json:"closed_expired"`
	Resets              int64     `json:"resets"`
	LagSeconds          *float64  `json:"lag_seconds,omitempty"`
	LagKnown            bool      `json:"lag_known"`
	Position            string    `json:"position"`
	Reports             string    `json:"reports"`
	RoleMismatch        bool      `json:"role_mismatch"`
	Rejoining           bool      `json:"rejoining"`
	Behind              bool      `json:"behind"`
	Source              string    `json:"source,omitempty"`
	Draining            bool      `json:"draining"`
	StatusError         string    `json:"status_error,omitempty"`
	FailoverWaits       int64     `json:"failover_waits"`
	FailoverWaitSeconds float64   `json:"failover_wait_seconds"`
	Latency             []latency `json:"latency,omitempty"`
}

// latency summarises one of a node's rwpool.StatementLatency histograms.
type latency struct {
	Kind       string  `json:"kind"`
	Outcome    string  `json:"outcome"`
	Count      int64   `json:"count"`
	SumSeconds float64 `json:"sum_seconds"`
	P50Seconds float64 `json:"p50_seconds"`
	P99Seconds float64 `json:"p99_seconds"`
}

// render reads db's current Snapshot. rwpool.Stats cannot fail for a db
// Publish accepted (its driver never changes, and a closed db still
// answers); should it, the variable shows no nodes.
func render(db *sql.DB) snapshot {
	s, err := rwpool.Stats(db)
	if err != nil {
		return snapshot{Nodes: []node{}}
	}
	return fromSnapshot(s)
}

func fromSnapshot(s rwpool.Snapshot) snapshot {
	out := snapshot{Nodes: make([]node, len(s.Nodes))}
	for i, n := range s.Nodes {
		// fmt.Sprint renders the state by its String method, or as is if
		// it is a plain string.
		state := fmt.Sprint(n.State)
		out.Nodes[i] = node{
			Name:                n.Name,
			Role:                fmt.Sprint(n.Role),
			Weight:              int64(n.Weight),
			Available:           n.Available,
			State:               state,
			Since:               n.Since,
			Trips:               int64(n.Trips),
			LastError:           n.LastError,
			ProbeLatencySeconds: n.ProbeLatency.Seconds(),
			MaxOpen:             int64(n.MaxOpen),
			Open:                int64(n.Open),
			Idle:                int64(n.Idle),
			InUse:               int64(n.InUse),
			Waiting:             int64(n.Waiting),
			Served:              int64(n.Served),
			Errors:              int64(n.Errors),
			WaitCount:           int64(n.WaitCount),
			WaitSeconds:         n.WaitDuration.Seconds(),
			Replays:             int64(n.Replays),
			Fallbacks:           n.Fallbacks,
			CausalReads:         n.CausalReads,
			CausalWaits:         n.CausalWaits,
			CausalWaitSeconds:   n.CausalWaitDuration.Seconds(),
			CausalFallbacks:     n.CausalFallbacks,
			TooStale:            n.TooStale,
			RoleSince:           n.RoleSince,
			Hedges:              n.Hedges,
			HedgeWins:           n.HedgeWins,
			HedgesRefused:       n.HedgesRefused,
			Dials:               n.Dials,
			ClosedSession:       n.ClosedSession,
			ClosedBroken:        n.ClosedBroken,
			ClosedExpired:       n.ClosedExpired,
			Resets:              n.Resets,
			LagKnown:            n.LagKnown,
			Position:            n.Position,
			Reports:             n.Reports,
			RoleMismatch:        n.RoleMismatch(),
			Rejoining:           n.Rejoining,
			Behind:              n.Behind,
			StatusError:         n.StatusError,
			FailoverWaits:       n.FailoverWaits,
			FailoverWaitSeconds: n.FailoverWaitDuration.Seconds(),
			Source:              n.Source,
			Draining:            n.Draining,
		}
		// An unavailable node has been unavailable since it entered that
		// state.
		if state == rwpool.Unavailable.String() {
			out.Nodes[i].UnavailableSince = n.Since
		}
		if n.LagKnown {
			lag := n.Lag.Seconds()
			out.Nodes[i].LagSeconds = &lag
		}
		for _, l := range n.Latency {
			out.Nodes[i].Latency = append(out.Nodes[i].Latency, latency{Kind: l.Kind, Outcome: l.Outcome, Count: l.Count,
				SumSeconds: l.Sum.Seconds(), P50Seconds: l.Quantile(0.5).Seconds(), P99Seconds: l.Quantile(0.99).Seconds()})
		}
	}
	for _, d := range s.Discovery {
		out.Discovery = append(out.Discovery, source{Name: d.Name, Source: d.Source, Members: int64(d.Members),
			Rounds: d.Rounds, Failures: d.Failures, LastError: d.LastError, LastOK: d.LastOK, Pending: d.Pending})
	}
	return out
}
