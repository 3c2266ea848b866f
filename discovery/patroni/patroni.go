// Package patroni finds the replicas of a Patroni cluster through its REST
// API, for rwpool's discover items. Import it for its side effect, which
// registers the "patroni" scheme:
//
//	import _ "github.com/rwpool/rwpool/discovery/patroni"
//
//	discover='patroni:http://10.0.0.1:8008,http://10.0.0.2:8008' every=5s
//
// The target lists base URLs of members' REST APIs, comma-separated. Any
// member answers GET /cluster for the whole cluster, so they are asked in
// turn until one answers: list more than one, or a name that leads to
// any. A URL may carry basic-auth credentials (http://user:password@host)
// and use https.
//
// A member is a replica to read from when Patroni reports it with the role
// replica, sync_standby or quorum_standby, in the state running or
// streaming, without the noloadbalance tag (Patroni's own way of saying
// "send no reads here", which its /replica health check honours too).
// nofailover says nothing about reads: such a member is read from. The
// leader is not a replica: writes go to the DSN's primary (follow it with
// follow_promotion=on). A URL's query parameter max_lag_bytes=N leaves
// out replicas Patroni reports more than N bytes behind, and those whose
// lag it does not know; without it, lag is left to rwpool's own max_lag,
// measured in time on the replica itself rather than read from a report
// up to a loop_wait old.
//
// The package keeps net/http out of the rwpool driver package: only
// programs that import it carry an HTTP client.
package patroni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/rwpool/rwpool/discovery"
)

func init() {
	discovery.Register("patroni", func(t string) (discovery.Source, error) { return Open(t) })
}

// Source asks Patroni's REST API for the cluster's replicas. It is safe
// for concurrent use.
type Source struct {
	urls   []*url.URL // base URLs, without max_lag_bytes
	maxLag []int64    // per URL: max_lag_bytes, or -1
	client *http.Client
}

// maxAnswer bounds the /cluster answer read: a cluster of hundreds of
// members answers a few tens of KiB.
const maxAnswer = 4 << 20

// Open returns the Source of a target: base URLs of Patroni REST APIs,
// comma-separated. Its errors never show a password.
func Open(target string) (*Source, error) {
	s := &Source{client: &http.Client{}}
	for _, raw := range splitURLs(target) {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("patroni: want http(s)://host:port URLs, comma-separated")
		}
		lag := int64(-1)
		q := u.Query()
		if v := q.Get("max_lag_bytes"); v != "" {
			if lag, err = strconv.ParseInt(v, 10, 64); err != nil || lag < 0 {
				return nil, errors.New("patroni: max_lag_bytes: want a number of bytes")
			}
			q.Del("max_lag_bytes")
			u.RawQuery = q.Encode()
		}
		s.urls, s.maxLag = append(s.urls, u), append(s.maxLag, lag)
	}
	return s, nil
}

// cluster is the part of GET /cluster's answer read here.
type cluster struct {
	Members []struct {
		Name  string          `json:"name"`
		Role  string          `json:"role"`
		State string          `json:"state"`
		Host  string          `json:"host"`
		Port  json.Number     `json:"port"`
		Lag   json.RawMessage `json:"lag"` // bytes, or "unknown"
		Tags  map[string]any  `json:"tags"`
	} `json:"members"`
}

// Members asks each URL in turn for /cluster and returns the replicas of
// the first answer.
func (s *Source) Members(ctx context.Context) ([]discovery.Member, error) {
	var errs []error
	for i, u := range s.urls {
		ms, err := s.ask(ctx, u, s.maxLag[i])
		if err == nil {
			return ms, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", u.Redacted(), err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("patroni: %w", errors.Join(errs...))
}

func (s *Source) ask(ctx context.Context, base *url.URL, maxLag int64) ([]discovery.Member, error) {
	u := base.JoinPath("cluster")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, errors.New("bad request")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text would hold the URL, and so the password
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /cluster: %s", resp.Status)
	}
	var c cluster
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("GET /cluster: not Patroni's answer: %w", err)
	}
	if c.Members == nil {
		return nil, errors.New("GET /cluster: no members list")
	}
	var out []discovery.Member
	for _, m := range c.Members {
		switch {
		case m.Role != "replica" && m.Role != "sync_standby" && m.Role != "quorum_standby":
		case m.State != "running" && m.State != "streaming":
		case truthy(m.Tags["noloadbalance"]):
		case maxLag >= 0 && !lagWithin(m.Lag, maxLag):
		default:
			out = append(out, discovery.Member{Name: m.Name, Host: m.Host, Port: m.Port.String()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// truthy reads a Patroni tag as Patroni does: true, or a string it takes
// for true.
func truthy(v any) bool {
	switch t := v.(type) {
	case bool:
		return t
	case string:
		switch strings.ToLower(t) {
		case "true", "on", "yes", "1":
			return true
		}
	}
	return false
}

func lagWithin(raw json.RawMessage, max int64) bool {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n <= max
}

// splitURLs cuts a comma-separated list of URLs only where a ',' starts
// another http(s) URL: a password may hold a ',' of its own.
func splitURLs(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' && (strings.HasPrefix(s[i+1:], "http://") || strings.HasPrefix(s[i+1:], "https://")) {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
