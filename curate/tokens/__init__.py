"""From curated runs to training data: source mixing and tokenization into token shards."""
