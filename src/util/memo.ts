/** Set `key` as the newest entry, forgetting the oldest past `max`: the bounded memos of a long-lived process. */
export function remember<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > max) map.delete(map.keys().next().value as K);
}
