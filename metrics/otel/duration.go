package rwotel

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rwpool/rwpool"
)

// MetricOperationDuration is OpenTelemetry's database client metric
// db.client.operation.duration: the time each statement took on the node
// that ran it (rwpool.StatementInfo.Duration: from when it had its
// connection to its result or its rows' close; pool waits are in
// MetricWaitTime); Float64Histogram, unit s, with the semantic
// conventions' bucket boundaries as advice. Its attributes are
// db.system.name, error.type (on failure: the error's Go type, as the
// conventions allow), server.address and server.port (where the node's DSN
// says its server is), AttrStatementNode ("rwpool.node"), AttrStatementRole
// ("rwpool.role"), AttrStatementKind and AttrStatementOutcome, and those
// of WithAttributes. It is recorded from a statement observer
// (rwpool.WithStatementObserver) that Register adds, not from the
// callback: OpenTelemetry has no asynchronous histogram.
const MetricOperationDuration = "db.client.operation.duration"

// Attribute keys of MetricOperationDuration (beside db.system.name and
// error.type, the conventions' own).
const (
	AttrStatementNode    = attribute.Key("rwpool.node")    // the node's name in the rwpool DSN
	AttrStatementRole    = attribute.Key("rwpool.role")    // "primary" or "replica"
	AttrStatementKind    = attribute.Key("rwpool.kind")    // "read", "write" or "transaction"
	AttrStatementOutcome = attribute.Key("rwpool.outcome") // "ok", "error", "replayed" or "hedged"

	attrSystem    = attribute.Key("db.system.name")
	attrErrorType = attribute.Key("error.type")
)

// durationBuckets are the semantic conventions' advice for
// db.client.operation.duration, in seconds.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// durations records MetricOperationDuration from a statement observer.
// Attribute sets are built once per node, role, kind and outcome (a
// failure's, with its error type, each time: failures are rare), so a
// statement costs a map lookup under a read lock and the SDK's record.
type durations struct {
	h     metric.Float64Histogram
	attrs []attribute.KeyValue // WithAttributes'
	off   atomic.Bool          // Unregister'ed: record nothing

	mu   sync.RWMutex
	sets map[setKey]metric.MeasurementOption
}

type setKey struct{ system, node, role, kind, outcome, addr, port string }

func newDurations(m metric.Meter, attrs []attribute.KeyValue) (*durations, error) {
	h, err := m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of database client operations: each statement's time on the rwpool node that ran it."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, err
	}
	return &durations{h: h, attrs: attrs, sets: map[setKey]metric.MeasurementOption{}}, nil
}

// observe is the statement observer.
func (d *durations) observe(_ context.Context, s rwpool.StatementInfo) {
	if d.off.Load() {
		return
	}
	k := setKey{s.System, s.Node, s.Role, s.Kind, s.Outcome, s.ServerAddress, s.ServerPort}
	var opt metric.MeasurementOption
	if s.Err == nil {
		d.mu.RLock()
		opt = d.sets[k]
		d.mu.RUnlock()
		if opt == nil {
			opt = metric.WithAttributeSet(attribute.NewSet(d.kvs(k)...))
			d.mu.Lock()
			d.sets[k] = opt
			d.mu.Unlock()
		}
	} else {
		opt = metric.WithAttributeSet(attribute.NewSet(append(d.kvs(k), attrErrorType.String(errorType(s.Err)))...))
	}
	d.h.Record(context.Background(), s.Duration.Seconds(), opt)
}

func (d *durations) kvs(k setKey) []attribute.KeyValue {
	kv := append(slices.Clone(d.attrs), attrSystem.String(k.system), AttrStatementNode.String(k.node),
		AttrStatementRole.String(k.role), AttrStatementKind.String(k.kind), AttrStatementOutcome.String(k.outcome))
	if k.addr != "" {
		kv = append(kv, attrServerAddress.String(k.addr))
	}
	if p, err := strconv.Atoi(k.port); err == nil {
		kv = append(kv, attrServerPort.Int(p))
	}
	return kv
}

// errorType is error.type for err: the type of the innermost error that
// is not rwpool's own wrapping (the driver's, such as *pq.Error), or
// "_OTHER".
func errorType(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if t := reflect.TypeOf(e); t != nil && t.PkgPath() == "" && t.Kind() == reflect.Pointer {
			if p := t.Elem().PkgPath(); p != "" && p != "github.com/rwpool/rwpool" && !strings.HasPrefix(p, "github.com/rwpool/rwpool/") && p != "errors" && p != "fmt" {
				return t.String()
			}
		}
	}
	return "_OTHER"
}

// registration is Register's metric.Registration: Unregister also stops
// the statement observer.
type registration struct {
	metric.Registration
	d *durations
}

func (r registration) Unregister() error {
	r.d.off.Store(true)
	return r.Registration.Unregister()
}
