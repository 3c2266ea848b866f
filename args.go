package rwpool

import (
	"database/sql/driver"
	"fmt"
)

// CheckNamedValue accepts every argument unchanged: the real connection
// that will run the statement is only known after routing, and its own
// NamedValueChecker (or the default conversion) is applied then, by
// convertArgs. This keeps driver-specific types (lib/pq arrays, mysql
// uint64, json.RawMessage, pgx types) working exactly as without rwpool.
func (vc *conn) CheckNamedValue(*driver.NamedValue) error { return nil }

// convertArgs applies to args, in place, the conversion database/sql would
// have applied had the statement been sent to rc (and st, when the
// statement was prepared there): the statement's NamedValueChecker, else the
// connection's, then the statement's ColumnConverter, then the default
// converter. It returns args shortened by any driver.ErrRemoveArgument.
func convertArgs(rc driver.Conn, st driver.Stmt, args []driver.NamedValue) ([]driver.NamedValue, error) {
	// An interface value, not a method value: binding c.CheckNamedValue
	// would allocate on every statement.
	checker, ok := st.(driver.NamedValueChecker)
	if !ok {
		checker, _ = rc.(driver.NamedValueChecker)
	}
	cc, _ := st.(driver.ColumnConverter)
	n := 0
	for i := range args {
		// Convert in place: a copy whose address reached the checker
		// interface would escape to the heap.
		nv := &args[i]
		err := driver.ErrSkip
		if checker != nil {
			err = checker.CheckNamedValue(nv)
		}
		if err == driver.ErrSkip && cc != nil {
			err = convertColumn(cc, nv)
		}
		if err == driver.ErrSkip {
			nv.Value, err = driver.DefaultParameterConverter.ConvertValue(nv.Value)
		}
		switch err {
		case nil:
			args[n] = *nv
			n++
		case driver.ErrRemoveArgument:
		default:
			return nil, fmt.Errorf("rwpool: converting argument %s type: %w", describe(nv), err)
		}
	}
	return args[:n], nil
}

// convertColumn applies a deprecated driver.ColumnConverter the way
// database/sql does: Valuers first, then the column's converter, whose
// result must be a driver.Value.
func convertColumn(cc driver.ColumnConverter, nv *driver.NamedValue) error {
	idx := nv.Ordinal - 1
	if _, ok := nv.Value.(driver.Valuer); ok {
		return driver.ErrSkip
	}
	v, err := cc.ColumnConverter(idx).ConvertValue(nv.Value)
	if err != nil {
		return err
	}
	if !driver.IsValue(v) {
		return fmt.Errorf("driver ColumnConverter error converted %T to unsupported type %T", nv.Value, v)
	}
	nv.Value = v
	return nil
}

func describe(nv *driver.NamedValue) string {
	if nv.Name == "" {
		return fmt.Sprintf("$%d", nv.Ordinal)
	}
	return "with name " + nv.Name
}

// namedToValues is for drivers with only the pre-context interfaces.
func namedToValues(named []driver.NamedValue) ([]driver.Value, error) {
	vs := make([]driver.Value, len(named))
	for i, nv := range named {
		if nv.Name != "" {
			return nil, fmt.Errorf("rwpool: driver does not support the use of named parameters")
		}
		vs[i] = nv.Value
	}
	return vs, nil
}

// valuesToNamed turns the arguments of the pre-context Stmt methods into
// named values.
func valuesToNamed(vs []driver.Value) []driver.NamedValue {
	named := make([]driver.NamedValue, len(vs))
	for i, v := range vs {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return named
}
