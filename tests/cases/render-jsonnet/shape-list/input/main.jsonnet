{
  apiVersion: 'v1',
  kind: 'List',
  items: [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'b' },
      stringData: { k: 'v' } },
  ],
}
