Functions a PostgreSQL standby refuses, from the PostgreSQL documentation:
"Hot Standby" (sections User's Overview and Administrator's Overview) and
"System Administration Functions" (Backup Control, Snapshot
Synchronization, Replication Management, Database Object Management and
Index Maintenance Functions), large objects, transaction IDs. Each is
called in an otherwise plain read, which must go to the primary; the
functions next to them that a standby does run stay on a replica.
Classified with DialectPostgres.

-- expect: primary write-func
SELECT pg_notify('jobs', 'run')

-- expect: primary write-func
SELECT txid_current()

-- expect: primary write-func
SELECT pg_current_xact_id()

-- expect: replica read
SELECT pg_current_xact_id_if_assigned(), txid_current_if_assigned()

-- expect: replica read
SELECT pg_current_snapshot(), txid_current_snapshot()

-- expect: primary write-func
SELECT lo_creat(-1)

-- expect: primary write-func
SELECT lo_create(0)

-- expect: primary write-func
SELECT lo_import('/tmp/motd')

-- expect: primary write-func
SELECT lo_import('/tmp/motd', 68583)

-- expect: primary write-func
SELECT lo_unlink(173454)

-- expect: primary write-func
SELECT lo_put(24528, 0, '\xaa')

-- expect: primary write-func
SELECT lo_from_bytea(0, '\xffffff00')

-- expect: primary write-func
SELECT lowrite(0, '\x01')

-- expect: primary write-func
SELECT lo_truncate(0, 10)

-- expect: primary write-func
SELECT lo_truncate64(0, 10)

-- expect: primary write-func
SELECT lo_open(24528, 131072)

-- expect: replica read
SELECT lo_get(24528, 0, 3)

-- expect: replica read
SELECT lo_export(24528, '/tmp/out')

-- expect: primary write-func
SELECT pg_create_restore_point('before_upgrade')

-- expect: primary write-func
SELECT pg_switch_wal()

-- expect: primary write-func
SELECT pg_current_wal_lsn()

-- expect: primary write-func
SELECT pg_current_wal_insert_lsn()

-- expect: primary write-func
SELECT pg_current_wal_flush_lsn()

-- expect: primary write-func
SELECT pg_walfile_name(pg_current_wal_lsn())

-- expect: primary write-func
SELECT pg_split_walfile_name('000000010000000100C000AB')

-- expect: primary write-func
SELECT pg_switch_xlog()

-- expect: primary write-func
SELECT pg_current_xlog_location()

-- expect: primary write-func
SELECT pg_current_xlog_insert_location()

-- expect: primary write-func
SELECT pg_current_xlog_flush_location()

-- expect: primary write-func
SELECT pg_xlogfile_name('0/16B3D80')

-- expect: primary write-func
SELECT pg_xlogfile_name_offset('0/16B3D80')

-- expect: primary write-func
SELECT * FROM pg_walfile_name_offset('0/16B3D80')

-- expect: primary write-func
SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') AS bytes

-- expect: primary write-func
SELECT pg_current_wal_lsn()::text AS location

-- expect: primary write-func
SELECT pg_catalog.pg_current_wal_lsn()

-- expect: primary write-func
SELECT "pg_switch_wal"()

-- expect: primary write-func
SELECT PG_SWITCH_WAL ()

-- expect: primary write-func
SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text

-- expect: primary session-func +session
SELECT pg_backup_start(label => 'nightly', fast => false)

-- expect: primary session-func +session
SELECT * FROM pg_backup_stop(wait_for_archive => true)

-- expect: primary session-func +session
SELECT pg_start_backup('label', false, false)

-- expect: primary session-func +session
SELECT * FROM pg_stop_backup(false, true)

-- expect: replica read
SELECT pg_wal_lsn_diff('0/3000000', '0/2000000')

-- expect: replica read
SELECT pg_last_wal_receive_lsn()

-- expect: replica read
SELECT pg_last_wal_replay_lsn()

-- expect: replica read
SELECT pg_last_xact_replay_timestamp()

-- expect: replica read
SELECT pg_is_in_recovery()

-- expect: replica read
SELECT pg_is_wal_replay_paused()

-- expect: replica read
SELECT pg_get_wal_replay_pause_state()

-- expect: primary write-func
SELECT pg_log_standby_snapshot()

-- expect: replica read
SELECT pg_export_snapshot()

-- expect: primary write-func
SELECT pg_logical_emit_message(true, 'app', 'checkpoint')

-- expect: primary write-func
SELECT pg_replication_origin_create('node_a')

-- expect: primary write-func
SELECT pg_replication_origin_drop('node_a')

-- expect: primary write-func
SELECT pg_replication_origin_advance('node_a', '0/16B3D80')

-- expect: primary write-func
SELECT pg_replication_origin_xact_setup('0/16B3D80', now())

-- expect: primary write-func
SELECT pg_replication_origin_xact_reset()

-- expect: primary write-func +session
SELECT pg_replication_origin_session_setup('node_a')

-- expect: primary write-func +session
SELECT pg_replication_origin_session_reset()

-- expect: primary session-func +session
SELECT pg_replication_origin_session_is_setup()

-- expect: primary session-func +session
SELECT pg_replication_origin_session_progress(true)

-- expect: replica read
SELECT pg_replication_origin_oid('node_a'), pg_replication_origin_progress('node_a', false)

-- expect: primary write-func +session
SELECT * FROM pg_create_physical_replication_slot('standby_3', true)

-- expect: primary write-func +session
SELECT * FROM pg_create_logical_replication_slot('cdc', 'pgoutput', temporary => true)

-- expect: primary write-func +session
SELECT * FROM pg_copy_physical_replication_slot('standby_3', 'standby_4')

-- expect: primary write-func +session
SELECT * FROM pg_copy_logical_replication_slot('cdc', 'cdc_copy')

-- expect: primary write-func
SELECT pg_drop_replication_slot('cdc')

-- expect: primary write-func
SELECT * FROM pg_replication_slot_advance('cdc', pg_current_wal_lsn())

-- expect: primary write-func
SELECT * FROM pg_logical_slot_get_changes('cdc', NULL, NULL)

-- expect: primary write-func
SELECT * FROM pg_logical_slot_get_binary_changes('cdc', NULL, 100, 'proto_version', '1')

-- expect: primary write-func
SELECT * FROM pg_logical_slot_peek_changes('cdc', NULL, NULL)

-- expect: primary write-func
SELECT * FROM pg_logical_slot_peek_binary_changes('cdc', NULL, NULL)

-- expect: replica read
SELECT slot_name, active FROM pg_replication_slots

-- expect: primary write-func
SELECT pg_restore_relation_stats('schemaname', 'public', 'relname', 'orders', 'relpages', 173::integer)

-- expect: primary write-func
SELECT pg_clear_relation_stats('public', 'orders')

-- expect: primary write-func
SELECT pg_restore_attribute_stats('schemaname', 'public', 'relname', 'orders', 'attname', 'id', 'inherited', false, 'null_frac', 0.5::real)

-- expect: primary write-func
SELECT pg_clear_attribute_stats('public', 'orders', 'id', false)

-- expect: primary write-func
SELECT pg_restore_extended_stats('schemaname', 'public', 'relname', 'orders', 'statistics_schemaname', 'public', 'statistics_name', 's1', 'inherited', false)

-- expect: primary write-func
SELECT pg_clear_extended_stats('public', 'orders', 'public', 's1', false)

-- expect: primary write-func
SELECT pg_import_system_collations('pg_catalog')

-- expect: primary write-func
SELECT brin_summarize_new_values('orders_created_brin')

-- expect: primary write-func
SELECT brin_summarize_range('orders_created_brin', 0)

-- expect: primary write-func
SELECT brin_desummarize_range('orders_created_brin', 0)

-- expect: primary write-func
SELECT gin_clean_pending_list('docs_body_gin'::regclass)

-- expect: replica read
SELECT pg_relation_size('orders'), pg_size_pretty(pg_total_relation_size('orders'))

-- expect: replica read
SELECT 'pg_switch_wal()' AS doc, pg_switch_wal_count FROM stats

-- expect: replica read
SELECT lo_put_count, txid_current_note FROM t

-- expect: replica read
SELECT "pg_current_wal_lsn" FROM lsn_log

-- expect: replica read
SELECT pg_current_wal_lsns()

-- expect: replica explain
EXPLAIN SELECT pg_switch_wal()

-- expect: primary explain-analyze
EXPLAIN ANALYZE SELECT pg_current_wal_lsn()

-- expect: primary multi
SELECT 1; SELECT pg_switch_wal()

-- expect: replica hint-replica
/*rwpool:replica*/ SELECT pg_current_wal_lsn()

-- expect: primary write
INSERT INTO backups (lsn) SELECT pg_current_wal_lsn()
