package rwpool_test

// The simulation's discover source: with a plan's Discover, the replicas
// s1…sN are found through it rather than listed as replica items, and
// the faults "leave" (a replica out of the source for a while) and
// "discovery-down" (the source fails) change what it answers. Every
// invariant holds through both: a replica that leaves drains, one that
// comes back is probed and joins, a source that fails keeps the set.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rwpool/rwpool/discovery"
)

// simSources holds each run's source, by cluster name.
var simSources sync.Map // string -> *simSource

func init() {
	discovery.Register("simsrc", func(target string) (discovery.Source, error) {
		s, ok := simSources.Load(target)
		if !ok {
			return nil, errors.New("no such simulated source")
		}
		return s.(*simSource), nil
	})
}

// simSource answers the replicas s1…sN, less those that left, or fails.
type simSource struct {
	mu      sync.Mutex
	servers []string
	left    map[string]int // leave faults in effect, by server
	down    int            // discovery-down faults in effect
}

func newSimSource(cluster string, replicas int) *simSource {
	s := &simSource{left: map[string]int{}}
	for i := 1; i <= replicas; i++ {
		s.servers = append(s.servers, fmt.Sprintf("s%d", i))
	}
	simSources.Store(cluster, s)
	return s
}

// Members lists each server as a member whose host is its endpoint: the
// simulated driver dials "CLUSTER/p host=sN" as sN (simcluster.Open).
func (s *simSource) Members(context.Context) ([]discovery.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down > 0 {
		return nil, errors.New("simulated source down")
	}
	var out []discovery.Member
	for _, sv := range s.servers {
		if s.left[sv] == 0 {
			out = append(out, discovery.Member{Name: sv, Host: sv})
		}
	}
	return out, nil
}

// leave takes server out of the answers; false if it is no member.
func (s *simSource) leave(server string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sv := range s.servers {
		if sv == server {
			s.left[server]++
			return true
		}
	}
	return false
}

func (s *simSource) back(server string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left[server]--
}

func (s *simSource) fail(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down += d
}

// heal ends every fault of the source.
func (s *simSource) heal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left, s.down = map[string]int{}, 0
}
