package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// benchModules are the modules whose versions the report names.
var benchModules = []string{
	"github.com/lib/pq", "github.com/go-sql-driver/mysql", "gorm.io/gorm", "gorm.io/driver/postgres",
	"gorm.io/driver/mysql", "gorm.io/plugin/dbresolver", "github.com/tsenart/nap",
}

// describeMachine returns what the report says about the machine, the
// toolchain, the servers and the modules.
func describeMachine(ctx context.Context, cl *cluster) [][2]string {
	m := [][2]string{
		{"CPU", cpuModel()},
		{"cores", fmt.Sprint(runtime.NumCPU())},
		{"memory", memTotal()},
		{"kernel", strings.TrimSpace(readFile("/proc/sys/kernel/osrelease"))},
		{"Go", runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH},
	}
	for _, drv := range []string{"postgres", "mysql"} {
		d := cl.driver(drv)
		name := map[string]string{"postgres": "PostgreSQL", "mysql": "MariaDB"}[drv]
		m = append(m, [2]string{name, serverVersion(ctx, d)})
	}
	info, _ := debug.ReadBuildInfo()
	for _, mod := range benchModules {
		v := "unknown"
		if info != nil {
			for _, dep := range info.Deps {
				if dep.Path == mod {
					v = dep.Version
					if dep.Replace != nil {
						v += " => " + dep.Replace.Path + " " + dep.Replace.Version
					}
				}
			}
		}
		m = append(m, [2]string{mod, v})
	}
	return m
}

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	for _, line := range strings.Split(readFile("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// memTotal is MemTotal of /proc/meminfo, in GiB.
func memTotal() string {
	for _, line := range strings.Split(readFile("/proc/meminfo"), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
				return fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	return "unknown"
}

// serverVersion asks the primary for its version.
func serverVersion(ctx context.Context, d benchDriver) string {
	db, err := sql.Open(d.Driver, d.NodeDSN(d.Primary))
	if err != nil {
		return "unknown"
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&v); err != nil {
		return "unknown"
	}
	if i := strings.Index(v, " on "); i > 0 && d.Driver == "postgres" {
		v = v[:i] // "PostgreSQL 15.x (Debian ...) on x86_64-pc-linux-gnu, compiled by ..."
	}
	return v
}
