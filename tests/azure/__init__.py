"""Azure Blob Storage: the AzureStore on Azurite, and the pieces that need no emulator."""
