// Package schema is the ent schema of the ent example: one entity, Item.
package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
)

// Item is a thing in stock.
type Item struct {
	ent.Schema
}

// Annotations names the table, so the example never touches a table of
// the same name that something else owns.
func (Item) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "ex_ent_items"}}
}

// Fields of the Item.
func (Item) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty(),
		field.Int("qty").NonNegative(),
	}
}
