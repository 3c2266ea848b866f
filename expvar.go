package rwpool

import (
	"database/sql"
	"errors"
	"expvar"
	"fmt"
	"sync"
	"time"
)

// PublishExpvar publishes the statistics of db, which must have been opened
// with rwpool, as the expvar variable name: every read of the variable (for
// instance a GET of /debug/vars, which importing expvar adds to
// http.DefaultServeMux) takes a fresh Snapshot and renders it as JSON:
//
//	{"nodes": [{"name": "primary", "role": "primary", "weight": 1,
//	  "available": true, "state": "available", "since": "2025-…",
//	  "trips": 0, "probe_latency_seconds": 0.0004, "max_open": 100,
//	  "open": 3, "idle": 2, "in_use": 1, "waiting": 0, "served": 1234,
//	  "errors": 0, "wait_count": 0, "wait_seconds": 0, "replays": 0,
//	  "fallbacks": 0, "lag_known": false, "position": "0/3000148",
//	  "reports": "writable", "role_mismatch": false},
//	 {"name": "replica1", …, "lag_seconds": 0.25, "lag_known": true, …}]}
//
// "unavailable_since" appears while a node is unavailable and "last_error"
// once it has tripped; the latter is the node's LastError, in which node
// DSNs are redacted, as everywhere in rwpool. "lag_seconds" appears only
// while a lag is known ("lag_known"; never for the primary);
// "status_error" only while the last status query failed. "position" and
// "reports" are "" until the health checker has read a status (and always
// for drivers without replication positions). Nodes appear by name; their
// DSNs are never shown.
//
// It returns an error wrapping ErrNotRWPool when db was not opened with
// rwpool, and an error (instead of expvar.Publish's panic) when name is
// empty or already published.
//
// expvar is process-global and offers no way to unpublish: the variable,
// and with it a reference to db's Connector, lives as long as the process.
// Publish each database once, under a name of its own. A database closed
// later keeps answering, with the state it had when closed (all
// connections closed, counters as they were).
//
// Package expvar, which rwpool imports for this function, registers its
// handler for GET /debug/vars (with the "cmdline" and "memstats" variables)
// on http.DefaultServeMux in every program that imports it: do not serve
// http.DefaultServeMux on a public address.
func PublishExpvar(name string, db *sql.DB) error {
	if name == "" {
		return errors.New("rwpool: expvar: empty name")
	}
	if db == nil {
		return fmt.Errorf("rwpool: expvar %q: nil *sql.DB", name)
	}
	c := connectorOf(db)
	if c == nil {
		return fmt.Errorf("rwpool: expvar %q: %w", name, ErrNotRWPool)
	}
	expvarMu.Lock()
	defer expvarMu.Unlock()
	if expvar.Get(name) != nil {
		return fmt.Errorf("rwpool: expvar %q is already published", name)
	}
	return publishExpvar(name, expvar.Func(func() any { return newExpvarSnapshot(c.Stats()) }))
}

// expvarMu serialises PublishExpvar's check-then-publish.
var expvarMu sync.Mutex

// publishExpvar calls expvar.Publish, turning its panic on a duplicate name
// (which only another package publishing the same name concurrently can
// cause here) into an error.
func publishExpvar(name string, v expvar.Var) (err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("rwpool: expvar %q is already published", name)
		}
	}()
	expvar.Publish(name, v)
	return nil
}

// expvarSnapshot is the JSON form of a Snapshot; durations are in seconds.
type expvarSnapshot struct {
	Nodes []expvarNode `json:"nodes"`
}

type expvarNode struct {
	Name                string    `json:"name"`
	Role                string    `json:"role"`
	Weight              int       `json:"weight"`
	Available           bool      `json:"available"`
	State               string    `json:"state"`
	Since               time.Time `json:"since"`
	UnavailableSince    time.Time `json:"unavailable_since,omitzero"`
	Trips               int64     `json:"trips"`
	LastError           string    `json:"last_error,omitempty"`
	ProbeLatencySeconds float64   `json:"probe_latency_seconds"`
	MaxOpen             int       `json:"max_open"`
	Open                int       `json:"open"`
	Idle                int       `json:"idle"`
	InUse               int       `json:"in_use"`
	Waiting             int       `json:"waiting"`
	Served              int64     `json:"served"`
	Errors              int64     `json:"errors"`
	WaitCount           int64     `json:"wait_count"`
	WaitSeconds         float64   `json:"wait_seconds"`
	Replays             int64     `json:"replays"`
	Fallbacks           int64     `json:"fallbacks"`
	LagSeconds          *float64  `json:"lag_seconds,omitempty"`
	LagKnown            bool      `json:"lag_known"`
	Position            string    `json:"position"`
	Reports             string    `json:"reports"`
	RoleMismatch        bool      `json:"role_mismatch"`
	StatusError         string    `json:"status_error,omitempty"`
}

func newExpvarSnapshot(s Snapshot) expvarSnapshot {
	out := expvarSnapshot{Nodes: make([]expvarNode, len(s.Nodes))}
	for i, n := range s.Nodes {
		out.Nodes[i] = expvarNode{
			Name:                n.Name,
			Role:                n.Role,
			Weight:              n.Weight,
			Available:           n.Available,
			State:               n.State.String(),
			Since:               n.Since,
			Trips:               n.Trips,
			LastError:           n.LastError,
			ProbeLatencySeconds: n.ProbeLatency.Seconds(),
			MaxOpen:             n.MaxOpen,
			Open:                n.Open,
			Idle:                n.Idle,
			InUse:               n.InUse,
			Waiting:             n.Waiting,
			Served:              n.Served,
			Errors:              n.Errors,
			WaitCount:           n.WaitCount,
			WaitSeconds:         n.WaitDuration.Seconds(),
			Replays:             n.Replays,
			Fallbacks:           n.Fallbacks,
			LagKnown:            n.LagKnown,
			Position:            n.Position,
			Reports:             n.Reports,
			RoleMismatch:        n.RoleMismatch(),
			StatusError:         n.StatusError,
		}
		if n.State == Unavailable {
			out.Nodes[i].UnavailableSince = n.Since
		}
		if n.LagKnown {
			lag := n.Lag.Seconds()
			out.Nodes[i].LagSeconds = &lag
		}
	}
	return out
}
