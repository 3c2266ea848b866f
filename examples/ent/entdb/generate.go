// Package entdb is the ent client generated from ./schema (go generate
// ./ent/entdb regenerates it; nothing here is edited by hand but this file).
package entdb

//go:generate go run -mod=mod entgo.io/ent/cmd/ent generate ./schema
