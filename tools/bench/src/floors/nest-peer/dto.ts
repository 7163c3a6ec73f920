// The NestJS peer's DTOs, validated by class-validator in both processes, as a Nest app does.
import { IsUUID } from 'class-validator';

/** The HTTP route's path parameters, and the NATS request's payload. */
export class StoreByIdDto {
  @IsUUID()
  id!: string;
}

/** The stores message pattern, under this peer's own subject prefix. */
export const storesGetSubject = (prefix: string) => `${prefix}.peer.stores.get`;
