// Package dsn parses, validates, formats and redacts rwpool's composite
// data source names.
//
// A composite DSN names the underlying database/sql driver, one primary
// node and zero or more weighted replica nodes, plus pool and routing
// settings. Each node DSN is handed verbatim to the underlying driver:
//
//	driver=postgres;
//	primary='host=db1 user=app dbname=shop';
//	replica='host=db2 user=app dbname=shop' weight=3;
//	replica='host=db3 user=app dbname=shop' weight=1 name=east;
//	pool_size=50
//
// # Grammar
//
//	dsn       = [ item ] { ";" [ item ] }
//	item      = key "=" value { attribute }   ; attributes: primary, replica only
//	attribute = attr-name "=" value           ; attr-name: weight | name
//	value     = bare | quoted
//	bare      = { any byte except ";", "'" and whitespace }
//	quoted    = "'" { escape | byte } "'"
//	escape    = "\'" | "\\"                ; a quote, a backslash
//	byte      = any byte except "'"         ; a "\" starting no escape is literal
//
// Whitespace (ASCII space, tab, newline, carriage return, vertical tab,
// form feed) is ignored around items and separates a value from its
// attributes (and attributes from each other), so a DSN may span lines.
// Whitespace is not allowed around "=": "key= x" would be ambiguous, so it
// is an error; an empty value is written as an empty pair of quotes. Empty
// items (a trailing ";", ";;") are ignored. Keys and attribute names are lower case and
// matched exactly.
//
// A quoted value may contain anything, including ";", whitespace and
// newlines. Inside quotes \' stands for a quote and \\ for a backslash; a
// backslash followed by any other byte is kept literally (so 'a\nb' is the
// four bytes a, \, n, b, and Windows paths need no doubling), but a value
// ending in a backslash must write it as \\. A bare value ends at
// whitespace or ";" and must not contain a quote. After a closing quote
// only whitespace, ";" or the end may follow.
//
// # Keys
//
//	key              default     meaning
//	driver           (required)  name of the registered database/sql driver
//	primary          (required)  the primary node DSN; exactly one
//	replica          (none)      a replica node DSN; zero or more (at most MaxReplicas)
//	pool_size        100         max open connections per node, 1..MaxPoolSize
//	min_idle         0           idle connections kept per node, 0..pool_size
//	acquire_timeout  10s         max wait for a connection, >= 0 (0: only the context)
//	idle_timeout     20s         close connections idle this long, >= 0 (0: never)
//	max_lifetime     30m         recycle connections this old, >= 0 (0: never)
//	max_waiters      10000       max goroutines waiting per node, >= 0
//	check_interval   2s          health check period, > 0
//	probe_query      SELECT 1    health check query, non-empty
//	probe_timeout    1s          health check timeout, > 0
//	breaker          on          circuit breaker: on | off
//	fallback         primary     reads with no replica available: primary | error
//	readonly_tx      replica     read-only transactions go to: replica | primary
//	balance          weighted    spread reads by weight alone, or by weight
//	                             scaled by measured latency: weighted | adaptive
//	max_lag          0 (off)     exclude replicas measured this far behind, >= 0
//	read_your_writes 0 (off)     session reads go to the primary this long after
//	                             a write, instead of comparing positions, >= 0
//	follow_promotion off         follow the roles the servers report: on | off
//	failover_wait    0 (off)     writes wait this long for a writable primary
//	                             instead of failing at once, >= 0
//	hedge_after      0 (off)     also start a plain read on another node when it
//	                             has had no answer this long, >= 0
//	hedge_budget     10%         hedges allowed, as a share of the reads of the
//	                             last ~10s, in (0%, 100%]
//	reset_query      (none)      run at the end of a lease that changed a
//	                             connection's session state, instead of closing
//	                             the connection (e.g. 'DISCARD ALL')
//	discover         (none)      a source of replicas found at run time,
//	                             scheme:target; zero or more (at most
//	                             MaxDiscover); see Discovery
//
// Integers are decimal. Durations use Go syntax (500ms, 2s, 1m30s; see
// time.ParseDuration) and must not be negative. A key other than replica
// may appear only once.
//
// # Node attributes
//
// A primary or replica value may be followed by whitespace-separated
// attributes, whose values follow the same bare/quoted rule:
//
//	weight  replicas only: integer in [0, MaxWeight], default 1. Weight 0
//	        marks a spare, used only when no weighted replica is available.
//	        A weight on the primary is an error.
//	name    node name, default "primary" for the primary and "replica1",
//	        "replica2", ... for the replicas in order of appearance. Names
//	        must be non-empty, free of control characters and unique across
//	        all nodes (an explicit name may not take another node's default).
//
// A discover value may be followed by the attributes weight (as a
// replica's, for every replica it finds), name (default the source's
// scheme; unique, without '/') and every (how often the source is asked,
// a positive duration, default 10s):
//
//	discover='srv:_postgresql._tcp.shop-replicas.svc.cluster.local' every=5s weight=2
//
// # Configs built in Go
//
// A program that does not start from a DSN string takes NewConfig, which
// holds every default above, and sets fields; Validate checks it with
// Parse's rules, and Nodes shows the nodes with their default names. A
// dsn.Config literal is rejected by Validate and rwpool.NewConnector:
// several settings have a meaning at zero (acquire_timeout=0: only the
// context bounds a wait; max_waiters=0: never wait; idle_timeout=0 and
// max_lifetime=0: never; breaker=off), so a literal's zero values cannot
// stand for the defaults.
//
// # Errors and secrets
//
// Parse and Validate return *Error values naming the key, attribute or node
// concerned. Error messages never contain a node DSN, and text that might
// be a fragment of a mis-quoted node DSN is not echoed: stray text after a
// value is never quoted, and an unknown key or node attribute is quoted only
// when it is made of letters, '_' and '-' and is close to a known name (a
// likely typo, reported with a "did you mean" suggestion). Values of the
// scalar settings (pool_size, breaker, ...) are quoted, truncated, in their
// errors. Config.String,
// Config.GoString, Config.LogValue and Node.String redact passwords with
// Redact; only Config.FormatDSN and Node.DSN carry them.
package dsn
