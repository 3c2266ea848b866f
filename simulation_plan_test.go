package rwpool_test

// The simulation's plans: everything a run does, drawn from one seed
// (simulation_test.go runs them).

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/rwpool/rwpool/internal/simcluster"
)

// simPlan is one run: the cluster, rwpool's settings, the workload and the
// fault schedule. It is a pure function of its seed; shrinking edits it.
type simPlan struct {
	Seed     uint64
	Flavor   simcluster.Flavor
	Replicas int           // servers besides the primary
	Lag      time.Duration // every replica's replay delay, as replicas always are a little behind
	Balanced bool          // a replica node whose endpoint balances over every replica
	Follow   bool          // follow_promotion=on
	Wait     time.Duration
	Hedge    bool
	PoolSize int
	Workers  int
	Ops      []string // the operation kinds the workers draw from
	Dur      time.Duration
	Faults   []simFault
	CloseMid bool // Close the database while the workers still run

	// causal_wait, when set (nil: the default, 50ms), and
	// causal_fallback=error (a read no replica can serve in time fails
	// with ErrTooStale instead of going to the primary).
	CausalWait  *time.Duration `json:",omitempty"`
	CausalError bool           `json:",omitempty"`

	// Discover: the replicas are found by a discover source
	// (simSource) instead of replica items, and the plan may take them
	// out of it ("leave") or make it fail ("discovery-down").
	Discover bool `json:",omitempty"`

	// AllFaults keeps the fault schedules the exploration leaves out as
	// known open (runFaults), as -sim.strict does: for a regression plan
	// (testdata/simulation) whose bug lay in one.
	AllFaults bool `json:",omitempty"`
}

// simFault is one fault of the schedule. Its target is a role, resolved
// when it runs: "primary", or "replica" with Pick choosing among the live
// replicas.
type simFault struct {
	At     time.Duration
	Kind   string
	Target string
	Pick   int
	For    time.Duration // how long the fault lasts, where it ends
	Amount time.Duration // slowness, delay
}

func (f simFault) String() string {
	s := fmt.Sprintf("+%.3fs %s %s#%d", f.At.Seconds(), f.Kind, f.Target, f.Pick)
	if f.For > 0 {
		s += fmt.Sprintf(" for %s", f.For)
	}
	if f.Amount > 0 {
		s += fmt.Sprintf(" amount %s", f.Amount)
	}
	return s
}

// The simulation's timing: fast health checks so that faults are found
// and healed within a short run.
const (
	simCheckInterval = 100 * time.Millisecond
	simProbeTimeout  = 150 * time.Millisecond
	simDeadlineSlack = 600 * time.Millisecond // a call returns within its deadline plus this
	simRotation      = 3 * time.Second        // every live node back in rotation within this of the heal
)

// The operation kinds of the workload (simulation_workload_test.go).
var simOpKinds = []string{
	"read", "read-bg", "write", "write-returning", "tx", "tx-readonly", "sql-tx",
	"lease", "lease-ro-rows", "prepared", "copy", "session-read", "session-write",
	"session-returning", "session-tx", "session-sql-tx", "session-tx-late",
	"token-handover", "stale-read", "monotonic",
}

var simFaultKinds = []string{
	"kill", "hang", "slow", "restart", "slow-positions", "lossy", "delay",
	"readonly-toggle", "writable-replica", "switchover", "crash-failover",
	"move-replica", "pooler",
}

// newSimPlan draws a plan from seed.
func newSimPlan(seed uint64) simPlan {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	p := simPlan{
		Seed:     seed,
		Flavor:   simcluster.Flavor(r.IntN(2)),
		Replicas: 1 + r.IntN(3),
		Balanced: r.IntN(3) == 0,
		Follow:   r.IntN(2) == 0,
		Hedge:    r.IntN(3) == 0,
		PoolSize: 2 + r.IntN(6),
		Workers:  2 + r.IntN(5),
		Dur:      time.Duration(1500+r.IntN(1500)) * time.Millisecond,
		CloseMid: r.IntN(8) == 0,
		Lag:      time.Duration(r.IntN(40)) * time.Millisecond,
	}
	if r.IntN(2) == 0 {
		p.Wait = time.Duration(300+r.IntN(700)) * time.Millisecond
	}
	switch r.IntN(3) {
	case 0:
		w := time.Duration(0)
		p.CausalWait = &w
	case 1:
		w := time.Duration(1+r.IntN(200)) * time.Millisecond
		p.CausalWait = &w
	}
	p.CausalError = r.IntN(3) == 0
	if p.Balanced && p.Replicas < 2 {
		p.Replicas = 2
	}
	// A few kinds of operation per run, so that each gets a share.
	for _, k := range simOpKinds {
		if r.IntN(2) == 0 {
			p.Ops = append(p.Ops, k)
		}
	}
	if len(p.Ops) == 0 {
		p.Ops = []string{"read", "write", "session-read", "session-write"}
	}
	n := r.IntN(5)
	for range n {
		f := simFault{
			At:     time.Duration(r.IntN(int(p.Dur/time.Millisecond)*3/4)) * time.Millisecond,
			Kind:   simFaultKinds[r.IntN(len(simFaultKinds))],
			Pick:   r.IntN(8),
			For:    time.Duration(50+r.IntN(700)) * time.Millisecond,
			Amount: time.Duration(20+r.IntN(300)) * time.Millisecond,
		}
		f.Target = "replica"
		if r.IntN(2) == 0 {
			f.Target = "primary"
		}
		p.Faults = append(p.Faults, f)
	}
	sortFaults(p.Faults)
	p.drawDiscovery(seed)
	return p
}

// simDiscoveryFaults are the faults of a plan whose replicas a discover
// source finds.
var simDiscoveryFaults = []string{"leave", "discovery-down"}

// drawDiscovery makes one plan in four find its replicas by discovery,
// with up to three faults of the source. It draws from a stream of its
// own, so that the plans of the seeds drawn before discovery existed
// keep every other draw.
func (p *simPlan) drawDiscovery(seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0xd15c))
	if r.IntN(4) != 0 {
		return
	}
	p.Discover = true
	for range r.IntN(4) {
		p.Faults = append(p.Faults, simFault{
			At:     time.Duration(r.IntN(int(p.Dur/time.Millisecond)*3/4)) * time.Millisecond,
			Kind:   simDiscoveryFaults[r.IntN(len(simDiscoveryFaults))],
			Target: "replica",
			Pick:   r.IntN(8),
			For:    time.Duration(50+r.IntN(700)) * time.Millisecond,
		})
	}
	sortFaults(p.Faults)
}

func sortFaults(fs []simFault) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].At < fs[j-1].At; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

func (p simPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %s, 1 primary + %d replicas %s behind", p.Seed, p.Flavor, p.Replicas, p.Lag)
	if p.Balanced {
		b.WriteString(" + a balancing replica endpoint")
	}
	if p.Discover {
		b.WriteString(", the replicas found by discovery")
	}
	fmt.Fprintf(&b, "; %s\n  %d workers for %s doing %s", p.dsnOptions(), p.Workers, p.Dur, strings.Join(p.Ops, ","))
	if p.CloseMid {
		b.WriteString("; Close while they run")
	}
	if len(p.Faults) == 0 {
		b.WriteString("\n  no faults")
	}
	for _, f := range p.Faults {
		b.WriteString("\n  " + f.String())
	}
	return b.String()
}

// dsnOptions are rwpool's settings for the plan.
func (p simPlan) dsnOptions() string {
	o := fmt.Sprintf("check_interval=%s;probe_timeout=%s;pool_size=%d;acquire_timeout=1s",
		simCheckInterval, simProbeTimeout, p.PoolSize)
	if p.Follow {
		o += ";follow_promotion=on"
	}
	if p.Wait > 0 {
		o += ";failover_wait=" + p.Wait.String()
	}
	if p.Hedge {
		o += ";hedge_after=20ms;hedge_budget=30%"
	}
	if p.CausalWait != nil {
		o += ";causal_wait=" + p.CausalWait.String()
	}
	if p.CausalError {
		o += ";causal_fallback=error"
	}
	return o
}

// JSON is the plan as -sim.plan takes it.
func (p simPlan) JSON() string {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (p simPlan) has(op string) bool {
	for _, o := range p.Ops {
		if o == op {
			return true
		}
	}
	return false
}
