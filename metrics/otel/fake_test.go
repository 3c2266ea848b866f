package rwotel_test

import (
	"database/sql"
	"testing"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/metricstest"
)

// The fake driver and cluster live in internal/metricstest, shared with
// the other metrics module; these names keep the tests short.
const (
	boomQuery = metricstest.BoomQuery
	sentinel  = metricstest.Sentinel
)

const fakeDriverName = "rwotel-test-fake"

var fake = metricstest.Register(fakeDriverName)

// pgFake is the same fake under a name containing "postgres": rwpool sends
// its nodes the PostgreSQL status query, which they answer as SetStatus
// says, so that replicas have positions, lags and reported roles.
var pgFake = metricstest.Register("rwotel-test-postgres-fake")

type cluster = metricstest.Cluster

func newCluster(t *testing.T, extra string) *cluster { return metricstest.NewCluster(t, fake, extra) }

func waitFor(t *testing.T, db *sql.DB, what string, ok func(rwpool.Snapshot) bool) {
	metricstest.WaitFor(t, db, what, ok)
}

func mustQuery(t *testing.T, db *sql.DB, q string) { metricstest.MustQuery(t, db, q) }
func mustExec(t *testing.T, db *sql.DB, q string)  { metricstest.MustExec(t, db, q) }

func nodeDSN(t *testing.T, node string) string { return metricstest.NodeDSN(t, node) }
