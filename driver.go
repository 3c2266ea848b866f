package rwpool

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/rwpool/rwpool/dsn"
)

// DriverName is the name rwpool registers with database/sql.
const DriverName = "rwpool"

func init() {
	sql.Register(DriverName, &Driver{})
}

// Driver is the rwpool database/sql driver. It implements
// driver.DriverContext, so sql.Open parses and validates the DSN at once and
// every *sql.DB gets one Connector with its own node pools.
type Driver struct {
	c *Connector // set on the Driver a Connector returns; nil on the registered one
}

// OpenConnector parses a composite DSN and returns a Connector for it.
func (d *Driver) OpenConnector(name string) (driver.Connector, error) {
	cfg, err := dsn.Parse(name)
	if err != nil {
		return nil, err
	}
	return NewConnector(cfg)
}

// Open returns a connection that owns a Connector of its own, closed when
// the connection is. database/sql never calls it (it uses OpenConnector);
// it exists for code that drives a driver.Driver by hand.
func (d *Driver) Open(name string) (driver.Conn, error) {
	c, err := d.OpenConnector(name)
	if err != nil {
		return nil, err
	}
	dc, err := c.Connect(context.Background())
	if err != nil {
		c.(*Connector).Close()
		return nil, err
	}
	vc := dc.(*conn)
	vc.owned = true
	return vc, nil
}
