// Command rwpool is the command-line companion of the rwpool database/sql
// driver (github.com/rwpool/rwpool):
//
//	rwpool demo               live demo: embedded primary + 2 replicas, a workload, injected faults
//	rwpool check DSN          check every node of a composite DSN: reachability, latency, version, role, lag
//	rwpool route SQL          where rwpool would send a statement, and why
//	rwpool bench              rwpool vs the bare driver, dbresolver and nap on real clusters
//
// From a clone of the repository, with nothing installed but Go:
//
//	go run ./cmd/rwpool demo
//
// The command lives in its own Go module, so that the in-process MySQL
// server the demo embeds (github.com/dolthub/go-mysql-server) never becomes
// a dependency of the driver; the go.work file at the repository root
// makes the command above work from there.
//
// Exit status: 0 on success, 1 when check finds a problem or a command
// fails, 2 for a usage error (bad command, flag, argument or DSN).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	// The real drivers, so that check and demo --dsn work with
	// driver=postgres (lib/pq), driver=pgx (pgx/v5) and driver=mysql.
	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/lib/pq"

	_ "github.com/rwpool/rwpool"
)

// Exit statuses.
const (
	exitOK      = 0
	exitProblem = 1 // check found a problem, or a command failed
	exitUsage   = 2 // bad command, flag, argument or DSN
)

const usageText = `rwpool: tools for the rwpool database/sql driver (github.com/rwpool/rwpool)

Usage:
  rwpool demo [flags]            live demo: an embedded primary and two replicas,
                                 a mixed workload through rwpool, injected faults
  rwpool check [flags] DSN       check every node of a composite DSN: reachable,
                                 round trip, version, role (primary/replica), lag
  rwpool route [flags] SQL       where rwpool would send a statement, and why
  rwpool bench [flags]           rwpool against the bare driver, gorm dbresolver and
                                 nap on real replicated clusters: throughput, latency,
                                 allocations, faults, memory
  rwpool help [COMMAND]          this text, or a command's help

Run 'rwpool COMMAND --help' for a command's flags and examples.

Examples:
  go run ./cmd/rwpool demo                      (from a clone of the repository)
  rwpool demo --duration 1m --mix 0.8 --goroutines 16
  rwpool check "driver=postgres;primary='host=db1 user=app dbname=shop';replica='host=db2 user=app dbname=shop'"
  rwpool route --dialect mysql "SELECT * FROM orders WHERE id = 1 FOR UPDATE"

Exit status: 0 success, 1 check found a problem (or a command failed),
2 usage error (unknown command, bad flag, bad DSN).
`

// command is one subcommand.
type command struct {
	run func(args []string, stdout, stderr io.Writer) int
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"demo":  {runDemo},
		"check": {runCheck},
		"route": {runRoute},
		"bench": {runBench},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args (without the program name) and returns the exit
// status.
func run(args []string, stdout, stderr io.Writer) int {
	// go-sql-driver/mysql logs dropped connections to stderr by itself:
	// the demo's faults cause them by design, and check reports errors in
	// its own words. Keep the output ours.
	mysql.SetLogger(log.New(io.Discard, "", 0))
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if name == "help" && len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.run([]string{"--help"}, stdout, stderr)
			}
			return usageErr(stderr, "rwpool", "unknown command %q", args[1])
		}
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	c, ok := commands[name]
	if !ok {
		if strings.HasPrefix(name, "-") {
			return usageErr(stderr, "rwpool", "flag %s before a command", name)
		}
		return usageErr(stderr, "rwpool", "unknown command %q", name)
	}
	return c.run(args[1:], stdout, stderr)
}

// usageErr prints a one-line usage error and returns exitUsage.
func usageErr(stderr io.Writer, cmd, format string, args ...any) int {
	help := "rwpool --help"
	if cmd != "rwpool" {
		help = cmd + " --help"
	}
	fmt.Fprintf(stderr, "%s: %s (see '%s')\n", cmd, oneLine(fmt.Sprintf(format, args...)), help)
	return exitUsage
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// newFlagSet returns a flag set for a subcommand that prints nothing by
// itself: parseFlags reports its errors in one line.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args with fs and returns the positional arguments.
// Flags may also follow them ("rwpool check DSN --timeout 2s"); "--" ends
// the flags. When the command must stop, done is set with the exit status:
// help was asked (usage printed to stdout, status 0) or a flag is bad (one
// line on stderr, status 2).
func parseFlags(fs *flag.FlagSet, usage string, args []string, stdout, stderr io.Writer) (pos []string, status int, done bool) {
	fail := func(err error) ([]string, int, bool) {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return nil, exitOK, true
		}
		return nil, usageErr(stderr, "rwpool "+fs.Name(), "%v", err), true
	}
	for {
		if err := fs.Parse(args); err != nil {
			return fail(err)
		}
		rest := fs.Args()
		if i := len(args) - len(rest) - 1; len(rest) > 0 && i >= 0 && args[i] == "--" {
			return append(pos, rest...), 0, false // everything after "--"
		}
		if len(rest) == 0 {
			return pos, 0, false
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
