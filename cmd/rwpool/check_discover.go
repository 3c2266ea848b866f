package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rwpool/rwpool/discovery"
	_ "github.com/rwpool/rwpool/discovery/patroni" // patroni: discover items
	"github.com/rwpool/rwpool/dsn"
)

// discoverNodes asks each discover item's source once, as the driver does
// at start, and returns the replicas it finds as nodes for check to
// examine, named as the driver names them (NAME/MEMBER); a source that
// fails, or answers none, is a problem: the driver would start with no
// replica from it.
func discoverNodes(cfg *dsn.Config, timeout time.Duration, w io.Writer) ([]dsn.Node, []string) {
	var nodes []dsn.Node
	var problems []string
	for _, d := range cfg.Discover {
		name := d.DisplayName()
		src, err := discovery.Open(d.Source)
		if err != nil {
			problems = append(problems, fmt.Sprintf("discover %s: %v", name, err))
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		ms, err := src.Members(ctx)
		cancel()
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("discover %s (%s): %v", name, d.Redacted(), err))
			continue
		case len(ms) == 0:
			problems = append(problems, fmt.Sprintf("discover %s (%s): no replica found", name, d.Redacted()))
			continue
		}
		fmt.Fprintf(w, "discover %s (%s): %d replica(s), asked every %s\n", name, d.Redacted(), len(ms), d.Every)
		for _, m := range ms {
			n, err := cfg.Primary.WithAddress(m.Host, m.Port)
			if err != nil {
				problems = append(problems, fmt.Sprintf("discover %s: member %s: %v", name, m.Name, err))
				continue
			}
			n.Name, n.Role, n.Weight = name+"/"+m.Name, dsn.RoleReplica, d.Weight
			nodes = append(nodes, n)
		}
	}
	return nodes, problems
}
