package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/tsenart/nap"
	gormmysql "gorm.io/driver/mysql"
	gormpostgres "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"
)

// reader is one variant under test, opened against a cluster: it runs a
// query returning one integer.
type reader interface {
	scanInt(ctx context.Context, query string) (int64, error)
	Close() error
}

// client is a reader that also writes: the variants of the failover
// scenarios, whose writes go to the primary.
type client interface {
	reader
	exec(ctx context.Context, query string) error
}

// maxIdle is every pool's idle limit: database/sql keeps 2 by default, and
// at 64 goroutines a pool that closes what it cannot keep measures dials.
const maxIdle = 64

// variantDescriptions explain each variant in the report.
var variantDescriptions = map[string]string{
	"bare":       "database/sql straight to replica1",
	"rwpool":     "rwpool: primary + replica1 (reads land on replica1)",
	"rwpool-2r":  "rwpool: primary + replica1 + replica2",
	"dbresolver": "gorm + gorm.io/plugin/dbresolver: Sources=primary, Replicas=replica1; Raw(\"SELECT 1\") with Clauses(dbresolver.Read)",
	"nap":        "github.com/tsenart/nap: nap.Open(driver, \"primary;replica1\")",
	"pgpool": "Pgpool-II (PostgreSQL only) in streaming-replication mode in front of the primary, replica1 and replica2, " +
		"load balancing over the replicas (weights 0:1:1), health check every 2s; one *sql.DB on its port " +
		"(config: bench/proxies/pgpool.conf)",
	"haproxy": "HAProxy: a write endpoint on the primary and a read endpoint balancing replica1 and replica2 " +
		"(pgsql-check / mysql-check every 2s, fall 3, on-marked-down shutdown-sessions); the application keeps " +
		"a write *sql.DB and a read *sql.DB and sends reads to the read one (config: bench/proxies/haproxy.cfg)",
}

// openVariant opens variant v against d.
func openVariant(v string, d benchDriver) (reader, error) {
	if len(d.Replicas) < 2 {
		return nil, fmt.Errorf("%s: the cluster has %d replicas, bench needs 2", d.Driver, len(d.Replicas))
	}
	primary, r1 := d.NodeDSN(d.Primary), d.NodeDSN(d.Replicas[0])
	switch v {
	case "bare":
		return openSQL(d.Driver, r1)
	case "rwpool":
		return openSQL("rwpool", rwpoolDSN(d, 1))
	case "rwpool-2r":
		return openSQL("rwpool", rwpoolDSN(d, 2))
	case "dbresolver":
		g, err := openGorm(d.Driver, primary, r1)
		if err != nil {
			return nil, err
		}
		return g, nil
	case "nap":
		db, err := nap.Open(d.Driver, primary+";"+r1)
		if err != nil {
			return nil, err
		}
		db.SetMaxIdleConns(maxIdle)
		return napReader{db}, nil
	case "pgpool", "haproxy":
		return openProxyVariant(v, d)
	}
	return nil, fmt.Errorf("unknown variant %q", v)
}

// rwpoolDSN is the composite DSN of the primary and the first n replicas,
// with rwpool's defaults (check_interval 2s, probe_timeout 1s).
func rwpoolDSN(d benchDriver, n int) string {
	return d.DSNOver(d.Primary, d.Replicas[:n], "")
}

// sqlReader is a plain *sql.DB: the bare driver, or rwpool.
type sqlReader struct{ db *sql.DB }

func openSQL(driver, dsn string) (sqlReader, error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return sqlReader{}, err
	}
	db.SetMaxIdleConns(maxIdle)
	return sqlReader{db}, nil
}

func (r sqlReader) scanInt(ctx context.Context, q string) (n int64, err error) {
	err = r.db.QueryRowContext(ctx, q).Scan(&n)
	return n, err
}

func (r sqlReader) exec(ctx context.Context, q string) error {
	_, err := r.db.ExecContext(ctx, q)
	return err
}

func (r sqlReader) Close() error { return r.db.Close() }

// napReader is a nap.DB.
type napReader struct{ db *nap.DB }

func (r napReader) scanInt(ctx context.Context, q string) (n int64, err error) {
	err = r.db.QueryRowContext(ctx, q).Scan(&n)
	return n, err
}

// exec goes to nap's master, the first DSN.
func (r napReader) exec(ctx context.Context, q string) error {
	_, err := r.db.ExecContext(ctx, q)
	return err
}

func (r napReader) Close() error { return r.db.Close() }

// gormReader is gorm with dbresolver. Its pools are *sql.DBs of our own,
// handed to gorm's dialectors, so that Close can close them (gorm has no
// Close, and dbresolver keeps its pools to itself).
type gormReader struct {
	db    *gorm.DB
	pools []*sql.DB
}

func openGorm(driver, primaryDSN string, replicaDSNs ...string) (*gormReader, error) {
	r := &gormReader{}
	dialector := func(dsn string) (gorm.Dialector, error) {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxIdleConns(maxIdle)
		r.pools = append(r.pools, db)
		if driver == "postgres" {
			// DriverName even with Conn, or gorm assumes pgx (see README).
			return gormpostgres.New(gormpostgres.Config{DriverName: "postgres", Conn: db}), nil
		}
		return gormmysql.New(gormmysql.Config{Conn: db}), nil
	}
	primary, err := dialector(primaryDSN)
	if err != nil {
		return nil, err
	}
	var replicas []gorm.Dialector
	for _, dsn := range replicaDSNs {
		replica, err := dialector(dsn)
		if err != nil {
			r.Close()
			return nil, err
		}
		replicas = append(replicas, replica)
	}
	// gorm's own connection is the primary's pool as well.
	if r.db, err = gorm.Open(primary, &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true}); err != nil {
		r.Close()
		return nil, err
	}
	err = r.db.Use(dbresolver.Register(dbresolver.Config{Sources: []gorm.Dialector{primary}, Replicas: replicas}))
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// scanInt sends the statement to a replica with Clauses(dbresolver.Read):
// dbresolver guesses a raw statement is a read only when it is longer
// than 10 characters, so a bare Raw("SELECT 1") would go to the primary.
func (r *gormReader) scanInt(ctx context.Context, q string) (n int64, err error) {
	err = r.db.WithContext(ctx).Clauses(dbresolver.Read).Raw(q).Row().Scan(&n)
	return n, err
}

// exec goes to the Sources: dbresolver sends what is not a read there.
func (r *gormReader) exec(ctx context.Context, q string) error {
	return r.db.WithContext(ctx).Exec(q).Error
}

func (r *gormReader) Close() error {
	var errs []error
	for _, p := range r.pools {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
