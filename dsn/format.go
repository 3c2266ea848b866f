package dsn

import (
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// FormatDSN returns the canonical composite DSN of c, secrets included.
// For a valid Config, Parse(c.FormatDSN()) returns a Config equal to c,
// except that its Primary and Replicas are c.Nodes() (default names and
// roles filled in, the primary's weight 1) and an empty Replicas is nil.
//
// Canonical form: items are separated by ";" without whitespace and
// written in a fixed order (driver, primary, replicas in order, then the
// settings in the order of the package documentation's table); settings
// equal to their default are omitted, as are a replica weight of 1 and node
// names equal to their default. Node DSNs are always single-quoted, with
// "'" and "\" escaped by a backslash; other values are bare when they
// consist only of safe characters and quoted otherwise.
//
// The result contains passwords: log String instead.
func (c *Config) FormatDSN() string {
	if c == nil {
		return ""
	}
	return c.format(false)
}

// String returns FormatDSN with every node DSN redacted (see Redact), so
// that a Config printed with %v or logged never leaks a password. For a
// Config whose node DSNs contain no password, String() == FormatDSN().
func (c *Config) String() string {
	if c == nil {
		return "<nil>"
	}
	return c.format(true)
}

// LogValue implements slog.LogValuer: a Config logs as its redacted String.
func (c *Config) LogValue() slog.Value {
	return slog.StringValue(c.String())
}

// LogValue implements slog.LogValuer: a Node logs as its redacted String.
func (n Node) LogValue() slog.Value {
	return slog.StringValue(n.String())
}

// GoString returns a Go-syntax representation of c with node DSNs
// redacted, so that printing a Config with %#v does not leak a password.
func (c *Config) GoString() string {
	if c == nil {
		return "(*dsn.Config)(nil)"
	}
	var b strings.Builder
	b.WriteString("&dsn.Config{Driver:")
	b.WriteString(strconv.Quote(c.Driver))
	b.WriteString(", Primary:")
	b.WriteString(c.Primary.GoString())
	b.WriteString(", Replicas:")
	if c.Replicas == nil {
		b.WriteString("[]dsn.Node(nil)")
	} else {
		b.WriteString("[]dsn.Node{")
		for i, r := range c.Replicas {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(r.GoString())
		}
		b.WriteString("}")
	}
	field := func(name, v string) {
		b.WriteString(", ")
		b.WriteString(name)
		b.WriteString(":")
		b.WriteString(v)
	}
	dur := func(d time.Duration) string { return strconv.FormatInt(int64(d), 10) }
	field("PoolSize", strconv.Itoa(c.PoolSize))
	field("MinIdle", strconv.Itoa(c.MinIdle))
	field("AcquireTimeout", dur(c.AcquireTimeout))
	field("IdleTimeout", dur(c.IdleTimeout))
	field("MaxLifetime", dur(c.MaxLifetime))
	field("MaxWaiters", strconv.Itoa(c.MaxWaiters))
	field("CheckInterval", dur(c.CheckInterval))
	field("ProbeQuery", strconv.Quote(c.ProbeQuery))
	field("ProbeTimeout", dur(c.ProbeTimeout))
	field("Breaker", strconv.FormatBool(c.Breaker))
	field("Fallback", strconv.Itoa(int(c.Fallback)))
	field("ReadOnlyTx", strconv.Itoa(int(c.ReadOnlyTx)))
	field("Balance", strconv.Itoa(int(c.Balance)))
	field("MaxLag", dur(c.MaxLag))
	field("ReadYourWrites", dur(c.ReadYourWrites))
	field("ResetQuery", strconv.Quote(c.ResetQuery))
	field("FailoverWait", dur(c.FailoverWait))
	field("FollowPromotion", strconv.FormatBool(c.FollowPromotion))
	field("HedgeAfter", dur(c.HedgeAfter))
	field("HedgeBudget", strconv.FormatFloat(c.HedgeBudget, 'g', -1, 64))
	field("CausalWait", dur(c.CausalWait))
	field("CausalFallback", strconv.Itoa(int(c.CausalFallback)))
	if c.Discover != nil {
		b.WriteString(", Discover:[]dsn.Discovery{")
		for i, d := range c.Discover {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("dsn.Discovery{Source:" + strconv.Quote(d.Redacted()) + ", Name:" + strconv.Quote(d.Name) +
				", Weight:" + strconv.Itoa(d.Weight) + ", Every:" + strconv.FormatInt(int64(d.Every), 10) + "}")
		}
		b.WriteString("}")
	}
	b.WriteString("}")
	return b.String()
}

func (c *Config) format(redact bool) string {
	var b strings.Builder
	b.WriteString(keyDriver)
	b.WriteByte('=')
	writeValue(&b, c.Driver)
	writeNode(&b, keyPrimary, c.Primary, primaryName, redact)
	for i, r := range c.Replicas {
		writeNode(&b, keyReplica, r, defaultReplicaName(i), redact)
	}
	item := func(key, v string) {
		b.WriteByte(';')
		b.WriteString(key)
		b.WriteByte('=')
		writeValue(&b, v)
	}
	if c.PoolSize != defaultPoolSize {
		item(keyPoolSize, strconv.Itoa(c.PoolSize))
	}
	if c.MinIdle != defaultMinIdle {
		item(keyMinIdle, strconv.Itoa(c.MinIdle))
	}
	if c.AcquireTimeout != defaultAcquireTimeout {
		item(keyAcquireTimeout, c.AcquireTimeout.String())
	}
	if c.IdleTimeout != defaultIdleTimeout {
		item(keyIdleTimeout, c.IdleTimeout.String())
	}
	if c.MaxLifetime != defaultMaxLifetime {
		item(keyMaxLifetime, c.MaxLifetime.String())
	}
	if c.MaxWaiters != defaultMaxWaiters {
		item(keyMaxWaiters, strconv.Itoa(c.MaxWaiters))
	}
	if c.CheckInterval != defaultCheckInterval {
		item(keyCheckInterval, c.CheckInterval.String())
	}
	if c.ProbeQuery != defaultProbeQuery {
		item(keyProbeQuery, c.ProbeQuery)
	}
	if c.ProbeTimeout != defaultProbeTimeout {
		item(keyProbeTimeout, c.ProbeTimeout.String())
	}
	if c.Breaker != defaultBreaker {
		v := "off"
		if c.Breaker {
			v = "on"
		}
		item(keyBreaker, v)
	}
	if c.Fallback != defaultFallback {
		item(keyFallback, c.Fallback.String())
	}
	if c.ReadOnlyTx != defaultReadOnlyTx {
		item(keyReadOnlyTx, c.ReadOnlyTx.String())
	}
	if c.Balance != BalanceWeighted {
		item(keyBalance, c.Balance.String())
	}
	if c.MaxLag != 0 {
		item(keyMaxLag, c.MaxLag.String())
	}
	if c.ReadYourWrites != 0 {
		item(keyReadYourWrites, c.ReadYourWrites.String())
	}
	if c.ResetQuery != "" {
		item(keyResetQuery, c.ResetQuery)
	}
	if c.FailoverWait != 0 {
		item(keyFailoverWait, c.FailoverWait.String())
	}
	if c.FollowPromotion {
		item(keyFollow, "on")
	}
	if c.HedgeAfter != 0 {
		item(keyHedgeAfter, c.HedgeAfter.String())
	}
	if c.HedgeBudget != defaultHedgeBudget {
		item(keyHedgeBudget, strconv.FormatFloat(c.HedgeBudget, 'g', -1, 64)+"%")
	}
	if c.CausalWait != defaultCausalWait {
		item(keyCausalWait, c.CausalWait.String())
	}
	if c.CausalFallback != defaultFallback {
		item(keyCausalFallback, c.CausalFallback.String())
	}
	for _, d := range c.Discover {
		writeDiscover(&b, d, redact)
	}
	return b.String()
}

// writeNode writes ";key='dsn' [weight=w] [name=n]".
func writeNode(b *strings.Builder, key string, n Node, defName string, redact bool) {
	b.WriteByte(';')
	b.WriteString(key)
	b.WriteByte('=')
	d := n.DSN
	if redact {
		d = Redact(d)
	}
	writeQuoted(b, d)
	if key == keyReplica && n.Weight != defaultWeight {
		b.WriteString(" weight=")
		b.WriteString(strconv.Itoa(n.Weight))
	}
	if n.Name != "" && n.Name != defName {
		b.WriteString(" name=")
		writeValue(b, n.Name)
	}
}

// writeValue writes v bare when that is unambiguous and safe, quoted
// otherwise.
func writeValue(b *strings.Builder, v string) {
	if isBareSafe(v) {
		b.WriteString(v)
		return
	}
	writeQuoted(b, v)
}

func isBareSafe(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if isAlnum(c) {
			continue
		}
		switch c {
		case '_', '-', '.', ':', '/', '+', '@', ',', '%', '*':
			continue
		}
		return false
	}
	return true
}

// writeQuoted writes v single-quoted, escaping "'" and "\" with a
// backslash.
func writeQuoted(b *strings.Builder, v string) {
	b.WriteByte('\'')
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\'' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('\'')
}
