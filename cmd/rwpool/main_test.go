package main

import (
	"bytes"
	"strings"
	"testing"
)

// runCmd runs the command line args and returns its exit status and output.
func runCmd(t *testing.T, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	status = run(args, &out, &errb)
	return status, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"-help"}} {
		st, out, errb := runCmd(t, args...)
		if st != exitOK || errb != "" {
			t.Errorf("%q: status %d, stderr %q", args, st, errb)
		}
		for _, want := range []string{"rwpool demo", "rwpool check", "rwpool route", "rwpool bench", "go run ./cmd/rwpool demo", "Exit status"} {
			if !strings.Contains(out, want) {
				t.Errorf("%q: help lacks %q", args, want)
			}
		}
	}
	// No arguments: the usage, on stderr, and status 2.
	st, out, errb := runCmd(t)
	if st != exitUsage || out != "" || !strings.Contains(errb, "Usage:") {
		t.Errorf("no args: status %d, stdout %q, stderr %q", st, out, errb)
	}
}

func TestSubcommandHelp(t *testing.T) {
	for _, cmd := range []string{"demo", "check", "route", "bench"} {
		for _, args := range [][]string{{cmd, "--help"}, {cmd, "-h"}, {"help", cmd}} {
			st, out, errb := runCmd(t, args...)
			if st != exitOK || errb != "" {
				t.Errorf("%q: status %d, stderr %q", args, st, errb)
			}
			for _, want := range []string{"Usage: rwpool " + cmd, "Flags:", "Examples:"} {
				if !strings.Contains(out, want) {
					t.Errorf("%q: help lacks %q", args, want)
				}
			}
		}
	}
	// Every flag a command defines is documented in its help.
	for cmd, flags := range map[string][]string{
		"demo":  {"--duration", "--mix", "--goroutines", "--dsn", "--refresh", "--plain", "--report"},
		"check": {"--timeout", "--pings", "--max-lag"},
		"route": {"--dialect"},
		"bench": {"--duration", "--warmup", "--rounds", "--goroutines", "--drivers", "--variants", "--faults",
			"--fault-steady", "--fault-window", "--fault-goroutines", "--fault-timeout", "--fault-pace", "--failovers", "--failover-variants", "--failover-window", "--no-throughput", "--no-memory", "--splice",
			"--env", "--cluster-dir", "--pg-port", "--my-port", "--cluster-script", "--keep-cluster", "--markdown"},
	} {
		_, out, _ := runCmd(t, cmd, "--help")
		for _, f := range flags {
			if !strings.Contains(out, f) {
				t.Errorf("%s --help does not document %s", cmd, f)
			}
		}
	}
}

// TestUsageErrors: every usage error is one line on stderr, status 2,
// nothing on stdout, and never a password.
func TestUsageErrors(t *testing.T) {
	const secret = "s3cr3t-pw"
	for _, tc := range []struct {
		args []string
		want string // in the error line
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--verbose"}, "flag --verbose before a command"},
		{[]string{"help", "nope"}, `unknown command "nope"`},
		{[]string{"bench", "--drivers", "oracle"}, `--drivers: unknown "oracle"`},
		{[]string{"demo", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"demo", "--duration", "soon"}, `invalid value "soon" for flag -duration`},
		{[]string{"demo", "--duration", "2s"}, "at least 5s"},
		{[]string{"demo", "--duration", "-1s"}, "--duration must be positive"},
		{[]string{"demo", "--mix", "1.5"}, "--mix must be between 0 and 1"},
		{[]string{"demo", "--goroutines", "0"}, "--goroutines must be between 1 and 1024"},
		{[]string{"demo", "--refresh", "-1s"}, "--refresh must not be negative"},
		{[]string{"demo", "extra"}, `unexpected argument "extra"`},
		{[]string{"demo", "--dsn", "driver=mysql;replica='u:" + secret + "@tcp(h)/d'"}, "primary"},
		{[]string{"demo", "--dsn", "driver=nosuch;primary='u:" + secret + "@tcp(h)/d'"}, `driver "nosuch" is not built into this command`},
		{[]string{"check"}, "no DSN given"},
		{[]string{"check", "a", "b"}, "one DSN expected"},
		{[]string{"check", "--timeout", "0s", "driver=mysql;primary='x'"}, "--timeout must be positive"},
		{[]string{"check", "--pings", "zero", "driver=mysql;primary='x'"}, `invalid value "zero" for flag -pings`},
		{[]string{"check", "--pings", "0", "driver=mysql;primary='x'"}, "--pings must be at least 1"},
		{[]string{"check", "--max-lag", "0s", "driver=mysql;primary='x'"}, "--max-lag must be positive"},
		{[]string{"check", "not a dsn"}, "rwpool: dsn:"},
		{[]string{"check", "driver=mysql;primary='u:" + secret + "@tcp(h)/d';pool_size=lots"}, "pool_size"},
		{[]string{"check", "driver=mysql;primary='u:" + secret + "@tcp(h)/d"}, "rwpool: dsn:"}, // unterminated quote
		{[]string{"check", "driver=oracle;primary='u:" + secret + "@h/d'"}, `driver "oracle" is not built into this command`},
		{[]string{"route"}, "no SQL statement given"},
		{[]string{"route", "--dialect", "oracle", "SELECT 1"}, `unknown dialect "oracle"`},
		{[]string{"route", "--dialect"}, "flag needs an argument: -dialect"},
	} {
		st, out, errb := runCmd(t, tc.args...)
		if st != exitUsage {
			t.Errorf("%q: status %d, want %d", tc.args, st, exitUsage)
		}
		if out != "" {
			t.Errorf("%q: stdout %q, want nothing", tc.args, out)
		}
		if strings.Count(errb, "\n") != 1 || !strings.HasSuffix(errb, "\n") {
			t.Errorf("%q: stderr is not one line: %q", tc.args, errb)
		}
		if !strings.Contains(errb, tc.want) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, errb, tc.want)
		}
		if !strings.HasPrefix(errb, "rwpool") {
			t.Errorf("%q: stderr %q does not start with the command name", tc.args, errb)
		}
		if strings.Contains(errb, secret) {
			t.Errorf("%q: stderr shows the password: %q", tc.args, errb)
		}
	}
}

func TestFlagsAfterArguments(t *testing.T) {
	st, out, errb := runCmd(t, "route", "SELECT 1", "--dialect", "mysql")
	if st != exitOK || !strings.Contains(out, "dialect:  mysql") {
		t.Errorf("status %d, stdout %q, stderr %q", st, out, errb)
	}
	// After --, everything is SQL, even text that looks like a flag.
	st, out, errb = runCmd(t, "route", "--dialect", "postgres", "--", "-- comment\nDELETE FROM t")
	if st != exitOK || !strings.Contains(out, "target:   primary") {
		t.Errorf("status %d, stdout %q, stderr %q", st, out, errb)
	}
}
