package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rwpool/rwpool/internal/testcluster"
)

// cluster is a running scripts/cluster.sh cluster, as its env file
// describes it.
type cluster struct {
	env     map[string]string
	script  string   // cluster.sh, absolute
	dir     string   // RWPOOL_CLUSTER_DIR
	proxies *proxies // started by startProxies, or nil
}

// benchDriver is one engine of the cluster, reached through one driver:
// lib/pq for PostgreSQL, go-sql-driver/mysql for MariaDB.
type benchDriver struct {
	*testcluster.Backend
	label   string          // for the report
	proxies *proxyEndpoints // the proxies in front of this engine, or nil
}

// loadCluster reads the env file of a running cluster.
func loadCluster(file string) (*cluster, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--env: %w", err)
	}
	env := testcluster.ParseEnvFile(string(b))
	for _, k := range []string{"RWPOOL_CLUSTER_SCRIPT", "RWPOOL_CLUSTER_DIR", "RWPOOL_PG_PRIMARY", "RWPOOL_PG_REPLICAS",
		"RWPOOL_MY_PRIMARY", "RWPOOL_MY_REPLICAS", "RWPOOL_DB_USER", "RWPOOL_DB_NAME"} {
		if env[k] == "" {
			return nil, fmt.Errorf("%s: no %s: not an env file of scripts/cluster.sh up", file, k)
		}
	}
	return &cluster{env: env, script: env["RWPOOL_CLUSTER_SCRIPT"], dir: env["RWPOOL_CLUSTER_DIR"]}, nil
}

// findClusterScript looks for scripts/cluster.sh in the current directory
// and its parents (go run ./cmd/rwpool runs from the repository root, the
// tests from cmd/rwpool).
func findClusterScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "cluster.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("scripts/cluster.sh not found from the current directory up: run from a clone of the repository, or give --cluster-script (or --env)")
		}
		dir = parent
	}
}

// scriptTimeout bounds one cluster.sh command (up may install packages).
const scriptTimeout = 5 * time.Minute

// runScript runs cluster.sh with args and extra environment, in a process
// group of its own so that a Ctrl-C at the terminal reaches us, not a
// half-done cluster operation; ctx ending kills the group. The servers it
// starts detach themselves and outlive it.
func runScript(ctx context.Context, script string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		tail := strings.TrimSpace(string(out))
		if len(tail) > 2000 {
			tail = "..." + tail[len(tail)-2000:]
		}
		return string(out), fmt.Errorf("%s %s: %w\n%s", filepath.Base(script), strings.Join(args, " "), err, tail)
	}
	return string(out), nil
}

// clusterUp runs `cluster.sh up` in dir with the given port bases and loads
// the env file it writes.
func clusterUp(ctx context.Context, script, dir string, pgPort, myPort int) (*cluster, error) {
	env := []string{"RWPOOL_CLUSTER_DIR=" + dir,
		fmt.Sprintf("RWPOOL_PG_PORT_BASE=%d", pgPort), fmt.Sprintf("RWPOOL_MY_PORT_BASE=%d", myPort)}
	if _, err := runScript(ctx, script, env, "up"); err != nil {
		return nil, err
	}
	return loadCluster(filepath.Join(dir, "env"))
}

// clusterDown runs `cluster.sh down` for dir, even after an interrupt.
func clusterDown(script, dir string) error {
	_, err := runScript(context.Background(), script, []string{"RWPOOL_CLUSTER_DIR=" + dir}, "down")
	return err
}

// run runs a cluster.sh command against this cluster.
func (c *cluster) run(ctx context.Context, args ...string) (string, error) {
	return runScript(ctx, c.script, []string{"RWPOOL_CLUSTER_DIR=" + c.dir}, args...)
}

// portTaken is what cluster.sh start-node says when another socket holds
// the node's port for a moment (see faults_harness_test.go in the root).
const portTaken = "is taken by a process that is not this node"

// nodeOp runs `cluster.sh op port`; start-node is retried for a while when
// the port is briefly taken.
func (c *cluster) nodeOp(ctx context.Context, op, addr string) error {
	_, port, _ := net.SplitHostPort(addr)
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := c.run(ctx, op, port)
		if err == nil || op != "start-node" || !strings.Contains(out, portTaken) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// waitHealthy waits until every node is up (status) and the replicas have
// caught up (wait-sync).
func (c *cluster) waitHealthy(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := c.run(ctx, "status")
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("cluster not healthy: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	_, err := c.run(ctx, "wait-sync")
	return err
}

// driver describes one engine of the cluster: "postgres" (lib/pq) or
// "mysql" (go-sql-driver/mysql, MariaDB).
func (c *cluster) driver(name string) benchDriver {
	env, _ := testcluster.Read(func(k string) string { return c.env[k] })
	if name == "postgres" {
		return benchDriver{env.Backend(testcluster.Postgres), "lib/pq → PostgreSQL", c.proxies.endpoints(name)}
	}
	return benchDriver{env.Backend(testcluster.MariaDB), "go-sql-driver/mysql → MariaDB", c.proxies.endpoints(name)}
}
