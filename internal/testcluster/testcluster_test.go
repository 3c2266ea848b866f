package testcluster

import (
	"strings"
	"testing"
)

func TestParseEnvFile(t *testing.T) {
	env := ParseEnvFile(`# written by cluster.sh
export RWPOOL_PG_PRIMARY=127.0.0.1:55632
export RWPOOL_PG_REPLICAS=127.0.0.1:55633,127.0.0.1:55634
export RWPOOL_DB_PASSWORD='app secret'
  export RWPOOL_DB_NAME="rwpool"
RWPOOL_IGNORED=1
export BROKEN
`)
	want := map[string]string{
		"RWPOOL_PG_PRIMARY": "127.0.0.1:55632", "RWPOOL_PG_REPLICAS": "127.0.0.1:55633,127.0.0.1:55634",
		"RWPOOL_DB_PASSWORD": "app secret", "RWPOOL_DB_NAME": "rwpool",
	}
	if len(env) != len(want) {
		t.Errorf("parsed %v", env)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}

// TestBackends: the DSNs every user of the package shares, from an env
// file's variables.
func TestBackends(t *testing.T) {
	vars := map[string]string{"RWPOOL_PG_PRIMARY": "127.0.0.1:1", "RWPOOL_PG_REPLICAS": "127.0.0.1:2,127.0.0.1:3",
		"RWPOOL_MY_PRIMARY": "127.0.0.1:4", "RWPOOL_MY_REPLICAS": "127.0.0.1:5", "RWPOOL_DB_USER": "app",
		"RWPOOL_DB_PASSWORD": "pw", "RWPOOL_DB_NAME": "db"}
	if _, ok := Read(func(string) string { return "" }); ok {
		t.Error("an empty environment describes clusters")
	}
	env, ok := Read(func(k string) string { return vars[k] })
	if !ok {
		t.Fatal("the environment describes no clusters")
	}
	var names []string
	for _, b := range env.Backends() {
		names = append(names, b.Name+"/"+b.Driver)
	}
	if got := strings.Join(names, " "); got != "postgres/postgres pgx/pgx mariadb/mysql" {
		t.Errorf("backends %s", got)
	}
	pg, my := env.Backend("postgres"), env.Backend("mysql")
	if pg.NodeDSN(pg.Replicas[1]) != "host=127.0.0.1 port=3 user=app password=pw dbname=db sslmode=disable connect_timeout=5" {
		t.Errorf("postgres DSN %q", pg.NodeDSN(pg.Replicas[1]))
	}
	if my.Name != MariaDB || my.NodeDSN(my.Primary) != "app:pw@tcp(127.0.0.1:4)/db?timeout=5s" || len(my.Replicas) != 1 {
		t.Errorf("mysql DSN %q, replicas %v", my.NodeDSN(my.Primary), my.Replicas)
	}
	// Other credentials and parameters: no password, no empty keyword.
	admin := *my
	admin.User, admin.Password, admin.Params = "root", "", "parseTime=true"
	if got := admin.NodeDSN("127.0.0.1:4"); got != "root@tcp(127.0.0.1:4)/db?timeout=5s&parseTime=true" {
		t.Errorf("admin mysql DSN %q", got)
	}
	pgAdmin := *pg
	pgAdmin.User, pgAdmin.Password, pgAdmin.Params = "postgres", "", "application_name=t"
	if got := pgAdmin.NodeDSN("127.0.0.1:1"); got != "host=127.0.0.1 port=1 user=postgres dbname=db sslmode=disable connect_timeout=5 application_name=t" {
		t.Errorf("admin postgres DSN %q", got)
	}
	if got, want := pg.DSN("pool_size=2", 3), "driver=postgres;primary='"+pg.NodeDSN("127.0.0.1:1")+
		"';replica='"+pg.NodeDSN("127.0.0.1:2")+"' weight=3;replica='"+pg.NodeDSN("127.0.0.1:3")+"';pool_size=2"; got != want {
		t.Errorf("composite DSN\n%s\nwant\n%s", got, want)
	}
	if got := my.DSNOver(my.Replicas[0], []string{my.Primary}, ""); got != "driver=mysql;primary='"+my.NodeDSN("127.0.0.1:5")+
		"';replica='"+my.NodeDSN("127.0.0.1:4")+"'" {
		t.Errorf("swapped composite DSN %q", got)
	}
	if i, ok := pg.ReplicaIndex("3"); !ok || i != 1 || pg.IsReplicaPort("1") || pg.PrimaryPort() != "1" {
		t.Errorf("ports: replica index of 3 = %d, %v; 1 a replica port %v; primary port %s", i, ok, pg.IsReplicaPort("1"), pg.PrimaryPort())
	}
}

// TestPoolers: the PgBouncer backends dial the poolers and report the
// servers behind them, so that faults and port queries concern servers.
func TestPoolers(t *testing.T) {
	vars := map[string]string{"RWPOOL_PG_PRIMARY": "127.0.0.1:1", "RWPOOL_PG_REPLICAS": "127.0.0.1:2,127.0.0.1:3",
		"RWPOOL_MY_PRIMARY": "127.0.0.1:4", "RWPOOL_DB_USER": "app", "RWPOOL_DB_NAME": "db",
		"RWPOOL_PGBOUNCER_TX": "127.0.0.1:21,127.0.0.1:22,127.0.0.1:23", "RWPOOL_PGBOUNCER_SESSION": "127.0.0.1:24,127.0.0.1:25,127.0.0.1:26"}
	env, _ := Read(func(k string) string { return vars[k] })
	var names []string
	for _, b := range env.Poolers() {
		names = append(names, b.Name+"/"+b.Driver)
	}
	if got := strings.Join(names, " "); got != "pgbouncer_tx/postgres pgbouncer_tx_pgx/pgx pgbouncer_session/postgres" {
		t.Fatalf("poolers %s", got)
	}
	tx, session := env.Backend(PgBouncerTx), env.Backend(PgBouncerSession)
	if !tx.TransactionPooled || session.TransactionPooled || !tx.IsPostgres() {
		t.Errorf("transaction pooled: tx %v, session %v", tx.TransactionPooled, session.TransactionPooled)
	}
	if tx.Primary != "127.0.0.1:21" || tx.Server(tx.Primary) != "127.0.0.1:1" || tx.PrimaryPort() != "1" {
		t.Errorf("tx primary %s, server %s, port %s", tx.Primary, tx.Server(tx.Primary), tx.PrimaryPort())
	}
	if i, ok := session.ReplicaIndex("3"); !ok || i != 1 || session.IsReplicaPort("25") {
		t.Errorf("session replica index of server port 3 = %d, %v; pooler port 25 a replica port %v", i, ok, session.IsReplicaPort("25"))
	}
	if !strings.Contains(tx.NodeDSN(tx.Replicas[0]), "port=22 ") || !strings.HasSuffix(tx.NodeDSN(tx.Primary), " binary_parameters=yes") {
		t.Errorf("tx node DSN %q", tx.NodeDSN(tx.Replicas[0]))
	}
	if env.Server("127.0.0.1:25") != "127.0.0.1:2" || env.Server("127.0.0.1:2") != "127.0.0.1:2" {
		t.Errorf("env servers: %s, %s", env.Server("127.0.0.1:25"), env.Server("127.0.0.1:2"))
	}
	delete(vars, "RWPOOL_PGBOUNCER_SESSION")
	if env, _ := Read(func(k string) string { return vars[k] }); env.Poolers() != nil {
		t.Error("poolers without the session-mode PgBouncers")
	}
}
