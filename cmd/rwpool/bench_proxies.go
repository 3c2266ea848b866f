package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rwpool/rwpool/internal/testcluster"
)

// The proxies rwpool is compared with: Pgpool-II (PostgreSQL) and HAProxy
// (both), run by scripts/proxies.sh in front of the bench's cluster with
// the configs of bench/proxies/ of the repository.

// proxyVariants are the variants that go through a proxy.
var proxyVariants = []string{"pgpool", "haproxy"}

func isProxy(v string) bool { return slices.Contains(proxyVariants, v) }

// proxySkip says why proxy variant v cannot run on driver drv, or "".
func proxySkip(v, drv string) string {
	if v == "pgpool" && drv != "postgres" {
		return "n/a: Pgpool-II is for PostgreSQL only"
	}
	return ""
}

// usesProxies reports whether a run of o needs the proxies.
func usesProxies(o benchOpts) bool {
	for _, v := range proxyVariants {
		if slices.Contains(o.variants, v) && (!o.noThroughput || len(o.faults) > 0) ||
			slices.Contains(o.failoverVariants, v) && len(o.failovers) > 0 {
			return true
		}
	}
	return false
}

// proxies are the running proxies of a cluster, as scripts/proxies.sh's env
// file describes them.
type proxies struct {
	script string // proxies.sh, absolute
	env    []string
	vars   map[string]string // of the env file
}

// proxyScript is scripts/proxies.sh beside the cluster's cluster.sh.
func (c *cluster) proxyScript() string {
	return filepath.Join(filepath.Dir(c.script), "proxies.sh")
}

// startProxies runs `proxies.sh up` for the cluster (a restart when they
// run: Pgpool-II then forgets the nodes it had detached) and loads its env
// file.
func (c *cluster) startProxies(ctx context.Context) error {
	p := &proxies{script: c.proxyScript(), env: []string{"RWPOOL_CLUSTER_DIR=" + c.dir}}
	if _, err := os.Stat(p.script); err != nil {
		return fmt.Errorf("proxies: %w", err)
	}
	if _, err := runScript(ctx, p.script, p.env, "up"); err != nil {
		return err
	}
	out, err := runScript(ctx, p.script, p.env, "env")
	if err != nil {
		return err
	}
	p.vars = testcluster.ParseEnvFile(out)
	for _, k := range []string{"RWPOOL_PGPOOL", "RWPOOL_HAPROXY_PG_WRITE", "RWPOOL_HAPROXY_PG_READ",
		"RWPOOL_HAPROXY_MY_WRITE", "RWPOOL_HAPROXY_MY_READ", "RWPOOL_HAPROXY_SOCKET"} {
		if p.vars[k] == "" {
			return fmt.Errorf("proxies.sh env: no %s", k)
		}
	}
	c.proxies = p
	return nil
}

// stopProxies runs `proxies.sh down`, even after an interrupt.
func (c *cluster) stopProxies() error {
	if c.proxies == nil {
		return nil
	}
	_, err := runScript(context.Background(), c.proxies.script, c.proxies.env, "down")
	c.proxies = nil
	return err
}

// freshProxy restarts the proxies before a fault or failover scenario of
// proxy variant v, so that each starts from the configured topology as a
// fresh instance of a library variant does.
func (c *cluster) freshProxy(ctx context.Context, v string) error {
	if !isProxy(v) {
		return nil
	}
	if c.proxies == nil {
		return errors.New(v + ": the proxies are not running")
	}
	return c.startProxies(ctx)
}

// proxyEndpoints are the addresses of the proxies for one engine.
type proxyEndpoints struct {
	pgpool          string // "" for MariaDB
	haWrite, haRead string
	haSocket        string
	haWriteBackend  string // HAProxy's listen section of the write endpoint
	haWriteServer   string
}

func (p *proxies) endpoints(drv string) *proxyEndpoints {
	if p == nil {
		return nil
	}
	if drv == "postgres" {
		return &proxyEndpoints{pgpool: p.vars["RWPOOL_PGPOOL"], haWrite: p.vars["RWPOOL_HAPROXY_PG_WRITE"],
			haRead: p.vars["RWPOOL_HAPROXY_PG_READ"], haSocket: p.vars["RWPOOL_HAPROXY_SOCKET"],
			haWriteBackend: "pg_write", haWriteServer: "primary"}
	}
	return &proxyEndpoints{haWrite: p.vars["RWPOOL_HAPROXY_MY_WRITE"], haRead: p.vars["RWPOOL_HAPROXY_MY_READ"],
		haSocket: p.vars["RWPOOL_HAPROXY_SOCKET"], haWriteBackend: "my_write", haWriteServer: "primary"}
}

// openProxyVariant opens a proxy variant against d: Pgpool-II is one
// *sql.DB on its port; HAProxy is two, a write one on the write endpoint and
// a read one on the read endpoint, chosen per statement (reads: scanInt,
// writes: exec, the rule of every other variant).
func openProxyVariant(v string, d benchDriver) (client, error) {
	if skip := proxySkip(v, d.Driver); skip != "" {
		return nil, errors.New(skip)
	}
	if d.proxies == nil {
		return nil, fmt.Errorf("%s: the proxies are not running", v)
	}
	if v == "pgpool" {
		return openSQL(d.Driver, d.NodeDSN(d.proxies.pgpool))
	}
	w, err := openSQL(d.Driver, d.NodeDSN(d.proxies.haWrite))
	if err != nil {
		return nil, err
	}
	r, err := openSQL(d.Driver, d.NodeDSN(d.proxies.haRead))
	if err != nil {
		w.Close()
		return nil, err
	}
	return splitClient{write: w.db, read: r.db}, nil
}

// splitClient is the usual application-side split: a *sql.DB for writes and
// one for reads.
type splitClient struct{ write, read *sql.DB }

// scanInt runs q on the read pool, or on the write pool for a write that
// returns a value (INSERT ... RETURNING, as the Patroni scenarios write).
func (c splitClient) scanInt(ctx context.Context, q string) (n int64, err error) {
	db := c.read
	if strings.HasPrefix(q, "INSERT") {
		db = c.write
	}
	err = db.QueryRowContext(ctx, q).Scan(&n)
	return n, err
}

func (c splitClient) exec(ctx context.Context, q string) error {
	_, err := c.write.ExecContext(ctx, q)
	return err
}

func (c splitClient) Close() error { return errors.Join(c.write.Close(), c.read.Close()) }

// moveHAProxyWrite points HAProxy's write server at addr with its runtime
// API and cuts the sessions still open to the old primary (what failover
// tooling does to an HAProxy in front of a primary: without the cut, pooled
// connections would keep writing to a read-only old primary).
func moveHAProxyWrite(ctx context.Context, ep *proxyEndpoints, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	cmd := fmt.Sprintf("set server %s/%s addr %s port %s", ep.haWriteBackend, ep.haWriteServer, host, port)
	out, err := haproxyCommand(ctx, ep.haSocket, cmd)
	if err != nil {
		return err
	}
	// HAProxy answers what changed; an error names the problem.
	if !strings.Contains(out, "changed") && strings.TrimSpace(out) != "" {
		return fmt.Errorf("haproxy %q: %s", cmd, strings.TrimSpace(out))
	}
	cmd = fmt.Sprintf("shutdown sessions server %s/%s", ep.haWriteBackend, ep.haWriteServer)
	if out, err = haproxyCommand(ctx, ep.haSocket, cmd); err != nil {
		return err
	}
	if strings.TrimSpace(out) != "" {
		return fmt.Errorf("haproxy %q: %s", cmd, strings.TrimSpace(out))
	}
	return nil
}

// haproxyCommand sends one command to HAProxy's admin socket and returns
// its answer.
func haproxyCommand(ctx context.Context, socket, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "unix", socket)
	if err != nil {
		return "", fmt.Errorf("haproxy admin socket: %w", err)
	}
	defer c.Close()
	if t, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(t)
	}
	if _, err := c.Write([]byte(cmd + "\n")); err != nil {
		return "", fmt.Errorf("haproxy admin socket: %w", err)
	}
	var b strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	if err := sc.Err(); err != nil {
		return b.String(), fmt.Errorf("haproxy admin socket: %w", err)
	}
	return b.String(), nil
}

// proxyConfigSection is the Markdown section that shows the proxies'
// configuration files, read from the repository.
func proxyConfigSection(root string) string {
	var b strings.Builder
	b.WriteString("## Proxy configurations\n\n" +
		"The `pgpool` and `haproxy` variants run Pgpool-II and HAProxy (Debian's\n" +
		"`pgpool2` and `haproxy` packages) on 127.0.0.1 in front of the same\n" +
		"clusters, started by `scripts/proxies.sh up` (which fills in the ports)\n" +
		"before the proxies' first measurement and restarted before each of their\n" +
		"fault and failover scenarios (a fresh instance, as for every variant).\n\n" +
		"In the failover scenarios Pgpool-II is its own endpoint. It has no\n" +
		"`failover_command` or `follow_primary_command`: those run scripts on the\n" +
		"database hosts (promote a standby, re-point or rebuild the others), which\n" +
		"the bench does itself for every variant; so it promotes replica1, and\n" +
		"Pgpool-II, having detached the dead primary, looks for a new primary among\n" +
		"its nodes. For HAProxy the bench, once replica1 is promoted, points the\n" +
		"write server at it with the runtime API (`set server pg_write/primary addr\n" +
		"…`) and cuts the sessions still open to the old primary (`shutdown sessions\n" +
		"server …`), as failover tooling would. Their configurations, from the\n" +
		"repository:\n")
	for _, f := range []string{"pgpool.conf", "haproxy.cfg"} {
		text, err := os.ReadFile(filepath.Join(root, "bench", "proxies", f))
		if err != nil {
			fmt.Fprintf(&b, "\n`bench/proxies/%s`: not found\n", f)
			continue
		}
		fmt.Fprintf(&b, "\n`bench/proxies/%s`:\n\n```\n%s```\n", f, strings.TrimRight(string(text), "\n")+"\n")
	}
	return b.String()
}

// proxySkipRows are the rows of a throughput table with n columns that say
// which proxy variants of vs cannot run on driver drv: the reason in the
// variant column (the figures' columns stay narrow), dashes elsewhere.
func proxySkipRows(vs []string, drv string, n int) [][]string {
	var out [][]string
	for _, v := range vs {
		if proxySkip(v, drv) != "" && n >= 2 {
			row := make([]string, n)
			for i := range row {
				row[i] = "—"
			}
			row[1] = v + " (n/a: PostgreSQL only)"
			out = append(out, row)
		}
	}
	return out
}

// proxyRatioTable compares each proxy variant of driver drv with rwpool:
// rwpool-2r (the same two replicas) when it ran, else rwpool. ok is false
// when there is nothing to compare.
func proxyRatioTable(rows []throughputRow, drv, label string) (t table, ok bool) {
	base := "rwpool"
	for _, r := range rows {
		if r.driver == drv && r.variant == "rwpool-2r" {
			base = "rwpool-2r"
		}
	}
	ref := map[int]throughputRow{}
	for _, r := range rows {
		if r.driver == drv && r.variant == base {
			ref[r.goroutines] = r
		}
	}
	t = table{
		title: fmt.Sprintf("proxies / %s, %s (throughput above 1: the proxy is faster; p99 below 1: the proxy's tail is shorter)", base, label),
		head:  []string{"goroutines", "variant", "throughput ratio", "p99 ratio"},
		right: []bool{true, false, true, true},
	}
	for _, r := range rows {
		b, have := ref[r.goroutines]
		if r.driver != drv || !isProxy(r.variant) || !have || b.qps == 0 || b.p99 == 0 {
			continue
		}
		t.rows = append(t.rows, []string{fmt.Sprint(r.goroutines), r.variant,
			fmt.Sprintf("%.3f", r.qps/b.qps), fmt.Sprintf("%.3f", float64(r.p99)/float64(b.p99))})
	}
	return t, len(t.rows) > 0
}
