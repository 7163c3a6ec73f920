// The NestJS peer, part 1: a Nest microservice on NATS answering the stores pattern with one
// store read by id from Postgres (with pg, behind a repository, as a Nest app would).
import 'reflect-metadata';
import { Controller, Inject, Injectable, Module, ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  MessagePattern,
  Payload,
  Transport,
  type MicroserviceOptions,
} from '@nestjs/microservices';
import pg from 'pg';
import { announce } from '../child.js';
import { StoreByIdDto, storesGetSubject } from './dto.js';

const PG_POOL = Symbol('PG_POOL');
const subject = storesGetSubject(process.env.PEER_PREFIX ?? '');

@Injectable()
class StoresRepository {
  // tsx (esbuild) emits no decorator metadata: every injection names its token.
  constructor(@Inject(PG_POOL) private readonly pool: pg.Pool) {}

  async findById(id: string): Promise<unknown> {
    const { rows } = await this.pool.query(
      'SELECT id, partner_id AS "partnerId", name, phone, timezone, address, ' +
        'fulfillment_types AS "fulfillmentTypes", availability, delivery, pickup, ' +
        'tax_rate AS "taxRate", updated_at AS "updatedAt" FROM peer_stores WHERE id = $1',
      [id],
    );
    return rows[0] ?? null;
  }
}

@Controller()
class StoresController {
  constructor(@Inject(StoresRepository) private readonly stores: StoresRepository) {}

  @MessagePattern(subject)
  get(@Payload(new ValidationPipe({ expectedType: StoreByIdDto })) query: StoreByIdDto) {
    return this.stores.findById(query.id);
  }
}

@Module({
  controllers: [StoresController],
  providers: [
    StoresRepository,
    {
      provide: PG_POOL,
      useFactory: () => new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 }),
    },
  ],
})
class StoresModule {}

const app = await NestFactory.createMicroservice<MicroserviceOptions>(StoresModule, {
  transport: Transport.NATS,
  options: { servers: [process.env.NATS_URL ?? ''], queue: `${subject}.workers` },
  logger: ['error'],
});
await app.listen();
announce({ ready: true });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
