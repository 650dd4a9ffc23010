-- The orders / order_items schema of the reference design, in StarRocks DDL.
-- The emulator loads this file with `emulator --schema examples/schema.sql`;
-- the same statements run unchanged on a StarRocks 4.x cluster.

CREATE DATABASE IF NOT EXISTS `test`;

CREATE TABLE IF NOT EXISTS `test`.`orders` (
  `order_id` BIGINT NOT NULL,
  `customer_id` BIGINT NOT NULL,
  `total_amount` DECIMAL(10,2) DEFAULT "0",
  `order_status` VARCHAR(32) DEFAULT "",
  `updated_at` DATETIME NULL
) ENGINE=OLAP
PRIMARY KEY(`order_id`)
DISTRIBUTED BY HASH(`order_id`) BUCKETS 4
PROPERTIES("replication_num" = "1");

CREATE TABLE IF NOT EXISTS `test`.`order_items` (
  `order_id` BIGINT NOT NULL,
  `item_id` INT NOT NULL,
  `product` VARCHAR(64) DEFAULT "",
  `quantity` INT NOT NULL DEFAULT "1",
  `price` DECIMAL(10,2) DEFAULT "0"
) ENGINE=OLAP
PRIMARY KEY(`order_id`, `item_id`)
DISTRIBUTED BY HASH(`order_id`) BUCKETS 4
PROPERTIES("replication_num" = "1");

-- An append-only table: every loaded row is kept, so a duplicate delivery
-- shows up as a second row. The exactly-once tests count on it.
CREATE TABLE IF NOT EXISTS `test`.`order_events` (
  `event_id` BIGINT NOT NULL,
  `order_id` BIGINT NOT NULL,
  `kind` VARCHAR(16) NOT NULL,
  `created_at` DATETIME NULL
) ENGINE=OLAP
DUPLICATE KEY(`event_id`)
DISTRIBUTED BY HASH(`event_id`) BUCKETS 4
PROPERTIES("replication_num" = "1");
