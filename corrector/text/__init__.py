"""Text utilities shared by the stages and training: character classes and sentences, WordPiece with character
offsets, and the simplified view of traditional text."""
