package dsn

// DSN keys, in canonical (FormatDSN) order.
const (
	keyDriver         = "driver"
	keyPrimary        = "primary"
	keyReplica        = "replica"
	keyPoolSize       = "pool_size"
	keyMinIdle        = "min_idle"
	keyAcquireTimeout = "acquire_timeout"
	keyIdleTimeout    = "idle_timeout"
	keyMaxLifetime    = "max_lifetime"
	keyMaxWaiters     = "max_waiters"
	keyCheckInterval  = "check_interval"
	keyProbeQuery     = "probe_query"
	keyProbeTimeout   = "probe_timeout"
	keyBreaker        = "breaker"
	keyFallback       = "fallback"
	keyReadOnlyTx     = "readonly_tx"
	keyBalance        = "balance"
	keyMaxLag         = "max_lag"
	keyReadYourWrites = "read_your_writes"
	keyResetQuery     = "reset_query"
	keyFailoverWait   = "failover_wait"
	keyFollow         = "follow_promotion"
	keyHedgeAfter     = "hedge_after"
	keyHedgeBudget    = "hedge_budget"
	keyCausalWait     = "causal_wait"
	keyCausalFallback = "causal_fallback"
	keyDiscover       = "discover"
)

// Node attribute names.
const (
	attrWeight = "weight"
	attrName   = "name"
	attrEvery  = "every" // discover only
)

// knownKeys lists every DSN key in canonical order.
var knownKeys = []string{
	keyDriver, keyPrimary, keyReplica, keyPoolSize, keyMinIdle,
	keyAcquireTimeout, keyIdleTimeout, keyMaxLifetime, keyMaxWaiters,
	keyCheckInterval, keyProbeQuery, keyProbeTimeout, keyBreaker,
	keyFallback, keyReadOnlyTx, keyBalance, keyMaxLag, keyReadYourWrites, keyResetQuery,
	keyFailoverWait, keyFollow, keyHedgeAfter, keyHedgeBudget,
	keyCausalWait, keyCausalFallback, keyDiscover,
}

var knownAttrs = []string{attrWeight, attrName, attrEvery}

func isKnownKey(k string) bool {
	for _, kk := range knownKeys {
		if k == kk {
			return true
		}
	}
	return false
}
