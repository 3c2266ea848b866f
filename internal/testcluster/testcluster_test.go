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
