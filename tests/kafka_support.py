"""Writing test records to the broker that tests/conftest.py starts (fixture ``kafka_bootstrap``)."""


def produce(bootstrap, topic, records, partitions=1):
    """Creates ``topic`` if needed and writes ``records`` (key, value bytes, and optionally the
    partition: else the key's) in order; returns nothing until the broker has them all."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(topic, partitions)])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value, *partition in records:
        producer.produce(topic, key=key, value=value, **({"partition": partition[0]} if partition else {}))
    assert producer.flush(30) == 0
